"""What every family adapter shares: the step's diffusion time, the extrapolated rope module, tables.

A family adapter (one module per family next to this one) knows three things about a diffusers
transformer: where its rope lives and what table format its attention processors read, how its
`timestep` argument maps to t in [0, 1] (t = 1 pure noise), and its trained grid. Everything
else is here:

- `StepTime` holds the transformer's `timestep` of the current forward (a forward pre-hook puts
  it there) and turns it into t only when a timestep-dependent method needs it beyond the
  trained grid: one host read per forward there, none elsewhere.
- `ExtrapolatedRope` is the base of the replacement modules: `plan(grid)` is None where the
  method leaves the trained encoding as it is (then the family's own module runs, so outputs are
  bit-identical), and `cached(key, build)` keeps the family-format tables per (grid, plan, device).
- `axial_table` (per-token coordinates), `grid_table` (a grid of per-axis positions) and
  `ids_table` (integer ids) build cos/sin with the core's `AxialRotaryEmbedding` (float64 angles,
  float32 tables) and fold the plan's logit scale into them; a family module only arranges them
  in its own layout. `Family` is the base of the adapters.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from axialrope import AxialRotaryEmbedding, Extrapolation, RopePlan, rope_frequencies


@dataclass(frozen=True)
class TrainedGrid:
    """A family's trained token grid, (h, w) or (t, h, w), and where the numbers come from."""

    grid: tuple[int, ...]
    source: str


class StepTime:
    """The diffusion time of the transformer's current forward.

    Args:
        timestep_scale: the family's `timestep` at pure noise (1 where the pipeline passes sigma,
            1000 where it passes sigma * 1000 or a DDPM step); t = timestep / timestep_scale.
    """

    def __init__(self, timestep_scale: float):
        self.timestep_scale = float(timestep_scale)
        self.timestep = None
        self._t: float | None = None

    def set(self, timestep) -> None:
        """Called before each forward with the transformer's `timestep` argument (not read yet)."""
        self.timestep, self._t = timestep, None

    def value(self) -> float:
        """t in [0, 1]; the largest entry when the batch (or Wan 2.2's per-token timesteps) differ."""
        if self._t is None:
            if self.timestep is None:
                raise RuntimeError(
                    "a timestep-dependent extrapolation needs the diffusion time: call the transformer with its "
                    "`timestep` argument (its forward pre-hook passes it on), or set rope.time.set(timestep)"
                )
            timestep = self.timestep
            value = float(timestep.detach().max()) if torch.is_tensor(timestep) else float(timestep)
            if not math.isfinite(value):
                raise ValueError(f"timestep must be finite, got {value}")
            self._t = min(max(value / self.timestep_scale, 0.0), 1.0)
        return self._t


def _is_identity(scaling, dim: int, theta: float) -> bool:
    """Whether a scaling leaves an axis's frequencies and gain exactly as trained."""
    if scaling is None:
        return True
    scaled, gain = rope_frequencies(dim, theta, scaling)
    return gain == 1.0 and torch.equal(scaled, rope_frequencies(dim, theta)[0])


def tensor_key(tensor: torch.Tensor) -> tuple:
    """A tensor's part of a cache key: its identity and version (kept alive by the entry's anchors)."""
    return id(tensor), tensor._version


def plan_key(plan: RopePlan) -> tuple:
    """What a table depends on in a plan (hashable)."""
    return plan.scalings, plan.logit_scale


class ExtrapolatedRope(nn.Module):
    """Base of the modules that replace a family's rope (the family's own module kept as `original`).

    Args:
        original: the family's rope module; it computes every table at or inside the trained grid
            (None for CogVideoX, whose trained tables come from its pipeline).
        extrapolation: the method.
        trained_grid: token grid per extrapolated axis, (h, w) or (t, h, w).
        time: the step's diffusion time (shared with the transformer's forward pre-hook).
        cache_size: tables kept, least recently used dropped first.
    """

    def __init__(self, original: nn.Module | None, extrapolation: Extrapolation, trained_grid: Sequence[int],
                 time: StepTime, cache_size: int = 8):
        super().__init__()
        self.original = original
        self.extrapolation = extrapolation
        self.trained_grid = tuple(trained_grid)
        self.time = time
        self.cache_size = cache_size
        self._cache: OrderedDict = OrderedDict()
        self._plans: dict = {}  # (grid, t, spacing) -> plan or None, so a step does no planning twice

    def token_spacing(self) -> Sequence[float] | None:
        """Per axis, position units between neighbouring tokens (None: token indices)."""
        return None

    def planned_axes(self) -> list[tuple[int, float]]:
        """(rotary channels, theta) of each axis the plan covers, in the trained grid's order."""
        raise NotImplementedError

    def plan(self, grid: Sequence[int]) -> RopePlan | None:
        """The plan for a global token grid, or None where the encoding is the trained one
        (then the family's own module runs)."""
        grid = tuple(int(n) for n in grid)
        if all(n <= trained for n, trained in zip(grid, self.trained_grid, strict=True)):
            return None  # every method is the trained encoding here; no timestep is read
        t = self.time.value() if self.extrapolation.is_timestep_dependent else None
        key = (grid, t, self.token_spacing())
        if key not in self._plans:
            plan = self.extrapolation.plan(self.trained_grid, grid, t, token_spacing=self.token_spacing())
            if plan.logit_scale == 1.0 and all(_is_identity(s, *a)
                                               for s, a in zip(plan.scalings, self.planned_axes(), strict=True)):
                plan = None  # e.g. riflex not yet past N_k, or dype-ntk at t = 0
            if len(self._plans) >= 64:  # timestep-dependent methods plan every step: keep it bounded
                self._plans.clear()
            self._plans[key] = plan
        return self._plans[key]

    def cached(self, key: tuple, build: Callable[[], object], anchors: tuple = ()):
        """The table under `key`, built once; under torch.compile the cache is bypassed.

        Tensors a table depends on go into the key as (id, version) and into `anchors`, which the
        entry keeps alive so that no other tensor can take their id meanwhile.
        """
        if torch.compiler.is_compiling():
            return build()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit[1]
        table = build()
        self._cache[key] = (anchors, table)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return table

    def clear_cache(self) -> None:
        self._cache.clear()
        self._plans.clear()

    def extra_repr(self) -> str:
        return f"method={self.extrapolation.method!r}, trained_grid={self.trained_grid}"


def axial_table(axes_dims: Sequence[int], thetas: Sequence[float], scalings: Sequence, logit_scale: float,
                coords: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Half-width cos, sin (..., seq, sum(axes_dims) // 2) float32 for coords (..., seq, n_axes).

    Each axis has its own theta and scaling (None: as trained); the scalings' attention factors
    are folded in per axis by the core, and sqrt(logit_scale) on every channel, so q.k logits
    between two tokens that carry the table grow by logit_scale.
    """
    embedding = AxialRotaryEmbedding(tuple(axes_dims), theta=list(thetas), scaling=list(scalings), cache_size=1)
    cos, sin = embedding(coords)
    if logit_scale != 1.0:
        gain = math.sqrt(logit_scale)
        cos, sin = cos * gain, sin * gain
    return cos, sin


def grid_table(axes_dims: Sequence[int], thetas: Sequence[float], scalings: Sequence, logit_scale: float,
               positions: Sequence[torch.Tensor], full: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of a grid whose axis a has the positions `positions[a]` (n_a,), row-major.

    Returns (prod n_a, pairs) half-width tables, or with `full` (prod n_a, 2 pairs) with each
    pair's value twice. Each axis's 1D table is built once (float64 angles, as `axial_table`)
    and broadcast over the grid, as diffusers' own grid modules do: the same values as
    per-token angles, for sum n_a instead of prod n_a trigonometric evaluations.
    """
    sizes = [len(p) for p in positions]
    gain = math.sqrt(logit_scale)
    cos_parts, sin_parts = [], []
    for axis, (dim, theta, scaling, where) in enumerate(zip(axes_dims, thetas, scalings, positions, strict=True)):
        embedding = AxialRotaryEmbedding((dim,), theta=theta, scaling=[scaling], cache_size=1)
        cos, sin = embedding(where[:, None])  # (n_a, dim // 2)
        if gain != 1.0:
            cos, sin = cos * gain, sin * gain
        if full:
            cos, sin = full_width(cos), full_width(sin)
        shape = [1] * len(sizes) + [cos.shape[-1]]
        shape[axis] = sizes[axis]
        cos_parts.append(cos.view(shape).expand(*sizes, -1))
        sin_parts.append(sin.view(shape).expand(*sizes, -1))
    width = sum(t.shape[-1] for t in cos_parts)
    return torch.cat(cos_parts, dim=-1).reshape(-1, width), torch.cat(sin_parts, dim=-1).reshape(-1, width)


def ids_table(axes_dims: Sequence[int], thetas: Sequence[float], scalings: Sequence, logit_scale: float,
              ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-width cos, sin (seq, 2 pairs) for coordinates ids (seq, n_axes), each pair's value twice.

    Ids that are non-negative integers (Flux's are) take each axis's 1D table over 0 .. max and
    gather its rows: the values of `axial_table`, for far fewer trigonometric evaluations. Other
    ids go through `axial_table` itself. Reading min, max and integrality costs one host sync.
    """
    whole = ids.detach()
    integral = bool(torch.equal(whole, whole.round()) and (whole.numel() == 0 or whole.min() >= 0))
    if not integral:
        cos, sin = axial_table(axes_dims, thetas, scalings, logit_scale, ids)
        return full_width(cos), full_width(sin)
    longest = [int(n) + 1 for n in whole.amax(dim=0).tolist()] if whole.numel() else [1] * len(axes_dims)
    rows = whole.long()
    positions = [torch.arange(n, dtype=torch.float64, device=ids.device) for n in longest]
    cos_parts, sin_parts = [], []
    for axis, (dim, theta, scaling) in enumerate(zip(axes_dims, thetas, scalings, strict=True)):
        cos, sin = grid_table((dim,), (theta,), (scaling,), logit_scale, positions[axis:axis + 1], full=True)
        cos_parts.append(cos.index_select(0, rows[:, axis]))
        sin_parts.append(sin.index_select(0, rows[:, axis]))
    return torch.cat(cos_parts, dim=-1), torch.cat(sin_parts, dim=-1)


def index_positions(grid: Sequence[int], device) -> list[torch.Tensor]:
    """Per axis, positions 0 .. n - 1 (float64)."""
    return [torch.arange(n, dtype=torch.float64, device=device) for n in grid]


def full_width(half: torch.Tensor) -> torch.Tensor:
    """(..., pairs) -> (..., 2 * pairs): each pair's value twice, the interleaved layout diffusers' tables use."""
    return half.repeat_interleave(2, dim=-1)


class Family:
    """One diffusers model family: how to recognise it, where its rope is, how to replace it.

    Subclasses set the class attributes and implement `make_rope`; the hooks and the undo of
    every change live in `axialrope.models.integrations.extrapolation`.

    Attributes:
        name: the family's short name ("flux", "wan", ...).
        class_names: the diffusers transformer classes it handles (subclasses too).
        video: whether the grid is (t, h, w) (else (h, w)); riflex needs video.
        rope_attr: the transformer attribute that holds its rope module (None: the family's
            tables come in through a forward argument, CogVideoX).
        timestep_scale: the value of the transformer's `timestep` at pure noise.
        published_riflex_index: RIFLEx's k for this family as its authors publish it (1-based),
            None where they publish none (then `riflex_index` derives one).
    """

    name: str = ""
    class_names: tuple[str, ...] = ()
    video: bool = False
    rope_attr: str | None = None
    timestep_scale: float = 1.0
    published_riflex_index: int | None = None

    def transformer_classes(self) -> tuple[type, ...]:
        import diffusers

        return tuple(getattr(diffusers, name) for name in self.class_names)

    def trained_grid(self, transformer) -> TrainedGrid:
        """The default trained grid for this transformer: `trained_grids.TRAINED_GRIDS[self.name]`
        (a family with several published grids overrides this to pick one from the config)."""
        from ..trained_grids import TRAINED_GRIDS  # that module imports TrainedGrid from here

        return TRAINED_GRIDS[self.name]

    def check(self, transformer) -> None:
        """Raises ValueError for a configuration the adapter cannot extrapolate (model untouched)."""
        rope = getattr(transformer, self.rope_attr) if self.rope_attr else None
        if rope is not None and hasattr(rope, "_diffusers_hook"):
            raise ValueError(
                f"{type(transformer).__name__}.{self.rope_attr} carries diffusers hooks (context parallelism?): "
                "call apply_extrapolation before enabling them, so they wrap the extrapolated module"
            )

    def temporal_inv_freq(self, transformer) -> torch.Tensor:
        """Video families: the trained inverse frequencies of the time axis, per position unit."""
        raise NotImplementedError

    def temporal_spacing(self, transformer) -> float:
        """Video families: position units between neighbouring latent frames (1: frame indices)."""
        return 1.0

    def published_riflex_index_for(self, transformer) -> int | None:
        """The authors' k where it applies to this transformer's configuration."""
        return self.published_riflex_index

    def riflex_index(self, transformer, trained_grid: Sequence[int]) -> int:
        """RIFLEx's k (1-based): the published one, else the pair with the shortest period longer
        than the trained length (`axialrope.frequencies.riflex_index_beyond`), which gives the
        published k for HunyuanVideo and CogVideoX."""
        published = self.published_riflex_index_for(transformer)
        if published is not None:
            return published
        from axialrope.frequencies import riflex_index_beyond

        length = trained_grid[0] * self.temporal_spacing(transformer)
        return riflex_index_beyond(self.temporal_inv_freq(transformer), length) + 1

    def make_rope(self, transformer, extrapolation: Extrapolation, trained_grid: Sequence[int], time: StepTime,
                  cache_size: int) -> ExtrapolatedRope:
        raise NotImplementedError

    def before_forward(self, rope: ExtrapolatedRope, args: tuple, kwargs: dict):
        """Called by the transformer's forward pre-hook after the timestep is read; may return
        new (args, kwargs)."""
        return None

    def install_extras(self, pipeline, extrapolation: Extrapolation, options: dict) -> list[Callable[[], None]]:
        """Changes beyond the rope (Flux's shift cap); returns their undos. `options` are the
        family's own keyword options, popped as they are used."""
        return []
