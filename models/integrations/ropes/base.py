"""What every rope kind shares: per-call state, the replacement module's base, and table builders.

- `CallState` is one forward's state (its timestep, a `StepTime` read only when a timestep-dependent
  method needs it beyond the trained grid, and the whole inputs the rope needs); the transformer's
  call plan (`models/call_plan.py`) derives it from the forward's arguments for the rope module, the
  reader, so calls in other threads, nested calls and deep copies never see each other's state.
- `ExtrapolatedRope` is the base of the replacement modules: `plan(grid)` is None wherever the
  method leaves the trained encoding as it is (then the family's own module runs), and `cached`
  keeps tables per key. While torch.compile traces, its call is one opaque operator that runs it
  eagerly (`graph_call.py`); a kind says how (`graph_arguments`, `fake_tables`).
- `grid_table`, `ids_table`, `axial_table` build cos, sin with the core's table builders
  (`axialrope.tables.axial_cos_sin`: float64 angles) on the CPU and move the float32 tables to
  the model's device (some devices have no float64).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import nn

from axialrope import Extrapolation, RopePlan, rope_frequencies
from axialrope.frequencies import riflex_index_beyond, scaling_is_identity
from axialrope.models.call_plan import StepTime, Timestep, argument, current
from axialrope.table_cache import CacheInfo, TableCache
from axialrope.table_cache import tensor_key as tensor_key  # the kinds' key of a tensor: the core's
from axialrope.tables import axial_cos_sin, axis_cos_sin

from ..family import Family
from . import graph_call


class CallState(StepTime):
    """One forward's state: its timestep, the kind's inputs (e.g. Flux's whole ids) and, for a method planned
    from the latent (sega), the forward's whole latent and what was read from it (`spectra`, per grid)."""

    def __init__(self, rule: Timestep, timestep, inputs: dict, latent=None):
        super().__init__(rule, timestep)
        self.inputs = inputs
        self.latent, self.spectra = latent, {}


@dataclass(frozen=True)
class RopeSetup:
    """Everything a replacement rope is built from.

    dims, thetas: per rope axis (reference axes included); trained_grid: per planned axis.
    riflex_off: riflex leaves the table as trained (the authors apply no k to this model).
    options: the kind's own keyword options; config: the model's config.
    choose: where the method is chosen per call (`auto` with a calibration), a callable giving for a
        token grid beyond the trained one (extrapolation, riflex_off); None: `extrapolation` everywhere.
    """

    family: Family
    extrapolation: Extrapolation
    trained_grid: tuple[int, ...]
    dims: tuple[int, ...]
    thetas: tuple[float, ...]
    cache_size: int = 8
    riflex_off: bool = False
    options: Mapping = field(default_factory=dict)
    config: Mapping = field(default_factory=dict)
    choose: Callable | None = None


class RopeKind:
    """A kind of rope module: how positions arrive, and the table format the replacement returns.

    Subclasses (frozen dataclasses, their fields the declaration's parameters) set `title` and
    `options` (their own keyword options of `apply_extrapolation`) and implement `make_rope`.
    """

    title: ClassVar[str] = ""
    options: ClassVar[tuple[str, ...]] = ()

    def make_rope(self, original: nn.Module | None, setup: RopeSetup) -> ExtrapolatedRope:
        raise NotImplementedError

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        """(inverse frequencies per position unit of the time axis, position units per latent frame)."""
        axis = setup.family.planned_axes[setup.family.temporal_axis]
        return rope_frequencies(setup.dims[axis], setup.thetas[axis])[0], 1.0

    def riflex_index(self, setup: RopeSetup) -> int:
        """RIFLEx's k (1-based) where none is published: the pair with the shortest period longer than
        the trained length (`axialrope.frequencies.riflex_index_beyond`), which gives the published k
        for HunyuanVideo and CogVideoX."""
        inv_freq, spacing = self.temporal_frequencies(setup)
        return riflex_index_beyond(inv_freq, setup.trained_grid[setup.family.temporal_axis] * spacing) + 1


def plan_key(plan: RopePlan) -> tuple:
    """What a table depends on in a plan (hashable)."""
    return plan.scalings, plan.logit_scale


class ExtrapolatedRope(nn.Module):
    """Base of the modules that replace a family's rope (the family's own module kept as `original`).

    Args:
        original: the family's rope module; it computes every table at or inside the trained grid
            (None where the trained tables come from the pipeline).
        setup: the method, trained grid, dims, thetas and options.

    `time` is the state used when the module is called outside the transformer's forward, and
    holds the latest forward's timestep; within a forward the call's own state is used.
    """

    def __init__(self, original: nn.Module | None, setup: RopeSetup):
        super().__init__()
        self.original = original
        self.setup = setup
        self.extrapolation = setup.extrapolation
        self.trained_grid = setup.trained_grid
        self.time = StepTime(setup.family.time)
        self._reset_caches()
        self.graph_key = graph_call.register(self)

    def __call__(self, *args, **kwargs):
        if torch.compiler.is_compiling():  # the graph calls one opaque operator that runs this call eagerly
            return graph_call.traced_call(self, args, kwargs)
        return super().__call__(*args, **kwargs)

    # -- per call ---------------------------------------------------------------------------------------

    def call_inputs(self, args: tuple, kwargs: dict, parameters: Sequence[str]) -> dict:
        """What this kind needs from a forward's whole inputs (before any context-parallel split)."""
        return {}

    def before_forward(self, state: CallState, args: tuple, kwargs: dict, parameters: Sequence[str]):
        """Called by the transformer's pre-hook after the state is pushed; may return new (args, kwargs)."""
        return None

    def call_state(self) -> StepTime:
        """The current forward's state, or `time` outside a forward."""
        return current(self, self.time)

    def t(self) -> float:
        return self.call_state().value()

    def t_for(self, extrapolation: Extrapolation) -> float:
        """The call's diffusion time as the timestep-dependent `extrapolation` reads it (default: `t()`)."""
        return self.t()

    def method_for(self, grid: Sequence[int]) -> tuple[Extrapolation, bool]:
        """(the method, riflex_off) for a token grid: the setup's own, or where the setup chooses per call
        (`RopeSetup.choose`) the one chosen for this grid."""
        if self.setup.choose is None:
            return self.extrapolation, self.setup.riflex_off
        return self.setup.choose(tuple(grid))

    # -- the plan -------------------------------------------------------------------------------------

    def token_spacing(self) -> Sequence[float] | None:
        """Per planned axis, position units between neighbouring tokens (None: token indices)."""
        return None

    def planned_axes(self) -> list[tuple[int, float]]:
        """(rotary channels, theta) of each planned axis, in the trained grid's order."""
        return [(self.setup.dims[a], self.setup.thetas[a]) for a in self.setup.family.planned_axes]

    def within_grid(self, grid: Sequence[int]) -> bool:
        """Whether a token grid lies at or inside the trained one on every planned axis."""
        return all(int(n) <= trained for n, trained in zip(grid, self.trained_grid, strict=True))

    def plan(
        self, grid: Sequence[int], token_spacing: Sequence[float] | None = None, time: float | None = None
    ) -> RopePlan | None:
        """The plan for a global token grid (per planned axis), or None where the encoding is the
        trained one (then the family's own module runs). token_spacing: this call's, per planned
        axis (default `self.token_spacing()`); time: the diffusion time of a timestep-dependent
        method (default: the call's, `t()`)."""
        grid = tuple(int(n) for n in grid)
        if self.within_grid(grid):
            return None  # every method is the trained encoding here; no timestep is read
        extrapolation, riflex_off = self.method_for(grid)
        t = None
        if extrapolation.is_timestep_dependent:
            t = self.t_for(extrapolation) if time is None else time
        spectrum = self.call_spectrum(grid, extrapolation) if extrapolation.is_latent_dependent else None
        spacing = self.token_spacing() if token_spacing is None else tuple(token_spacing)
        key = (grid, t, spacing, spectrum)
        plan = self._plans.get(key, False)
        if plan is False:
            plan = extrapolation.plan(self.trained_grid, grid, t, token_spacing=spacing, spectrum=spectrum)
            if riflex_off:
                plan = RopePlan((None,) * len(grid), plan.logit_scale, (1.0,) * len(grid))
            axes = self.planned_axes()
            unchanged = (scaling_is_identity(*axis, s) for s, axis in zip(plan.scalings, axes, strict=True))
            if plan.logit_scale == 1.0 and all(unchanged):
                plan = None  # e.g. riflex not yet past N_k, or dype-ntk at t = 0
            if len(self._plans) >= 64:  # timestep-dependent methods plan every step: keep it bounded
                self._plans = {}
            self._plans[key] = plan
        return plan

    @property
    def reads_latent(self) -> bool:
        """Whether a method this rope may use reads the call's latent (sega; under "auto", any band's)."""
        choose = self.setup.choose
        methods = [self.extrapolation] if choose is None else [method for method, _ in choose.resolved]
        return any(method.is_latent_dependent for method in methods)

    def call_spectrum(self, grid: tuple[int, ...], extrapolation: Extrapolation):
        """sega's reading of this call's whole latent (`CallState.latent`, taken before any context-parallel split)
        on the global token `grid`, once per call and grid; None outside a forward (the rope called on its own:
        every pair then gets m_ref)."""
        state = self.call_state()
        latent = getattr(state, "latent", None)
        if latent is None:
            return None
        if grid not in state.spectra:
            try:
                state.spectra[grid] = extrapolation.spectrum(latent, grid)
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"sega cannot read {self.setup.family.title}'s latent on the grid {grid}: {error}"
                ) from None
        return state.spectra[grid]

    def axis_scalings(self, plan: RopePlan) -> tuple:
        """The plan's scalings per rope axis (None on reference axes)."""
        scalings = [None] * len(self.setup.dims)
        for axis, scaling in zip(self.setup.family.planned_axes, plan.scalings, strict=True):
            scalings[axis] = scaling
        return tuple(scalings)

    # -- caching --------------------------------------------------------------------------------------

    def cached(self, key: tuple, build: Callable[[], object], anchors: tuple = ()):
        """The table under `key`, built once; under torch.compile the cache is bypassed.

        Tensors a table depends on go into the key as `tensor_key(t)` and into `anchors`, which the
        entry keeps alive so that no other tensor can take their id meanwhile.
        """
        if torch.compiler.is_compiling():
            return build()
        return self._cache.get(key, build, anchors)

    def cache_info(self) -> CacheInfo:
        """(hits, misses, maxsize, currsize) of the table cache."""
        return self._cache.info()

    def _reset_caches(self) -> None:
        self._cache = TableCache(self.setup.cache_size)
        self._plans: dict = {}

    def clear_cache(self) -> None:
        self._reset_caches()

    def __deepcopy__(self, memo):
        """A copy with its own state and empty caches (their keys hold the original's tensor ids)."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            clone.__dict__[name] = copy.deepcopy(value, memo)
        clone._reset_caches()
        clone.graph_key = graph_call.register(clone)
        return clone

    def __setstate__(self, state) -> None:
        """An unpickled module is a new one: its own key for the graph operator."""
        super().__setstate__(state)
        self.graph_key = graph_call.register(self)

    # -- under torch.compile (`graph_call.py`) ------------------------------------------------------------------

    def within_trained(self, args: tuple, kwargs: dict) -> bool:
        """Whether the call's shapes and Python arguments alone put it at or inside the trained grid (then the
        family's own module is traced, as in the untouched model). False where the grid lies in values."""
        return False

    def graph_arguments(self, args: tuple, kwargs: dict) -> tuple[list, list[int], torch.device] | None:
        """A call's arguments as the graph operator takes them, (tensors, Python integers, device), or None
        where this kind has no operator form (its call then runs eagerly behind a graph break). The default
        takes calls whose arguments are all tensors (ids, the latent), each detached: only its values or
        shape are read, and the tables carry no gradient."""
        if kwargs or not args or not all(isinstance(a, torch.Tensor) for a in args):
            return None
        if type(self).fake_tables is ExtrapolatedRope.fake_tables:
            return None
        return [a.detach() for a in args], [], args[0].device

    def from_graph_arguments(self, tensors: list, ints: list[int], device: torch.device) -> tuple[tuple, dict]:
        """(args, kwargs) of the eager call from what `graph_arguments` gave the operator."""
        return tuple(tensors), {}

    def fake_tables(self, tensors: list, ints: list[int], device: torch.device) -> list[torch.Tensor]:
        """Empty tensors with the shapes, dtypes and device of the call's tables (contiguous), for tracing."""
        raise NotImplementedError

    def graph_outputs(self, output) -> list[torch.Tensor]:
        """The call's output as the operator's list of tensors (default: a tuple's items, or one tensor)."""
        return list(output) if isinstance(output, (tuple, list)) else [output]

    def from_graph_outputs(self, tensors: list):
        """The call's output from the operator's list (default: a tuple)."""
        return tuple(tensors)

    def extra_repr(self) -> str:
        method = "auto" if self.setup.choose is not None else self.extrapolation.method
        return f"method={method!r}, trained_grid={self.trained_grid}"


# -- tables ---------------------------------------------------------------------------------------------------


def index_positions(grid: Sequence[int]) -> list[torch.Tensor]:
    """Per axis, positions 0 .. n - 1 (float64, on the CPU)."""
    return [torch.arange(n, dtype=torch.float64) for n in grid]


def full_width(half: torch.Tensor) -> torch.Tensor:
    """(..., pairs) -> (..., 2 * pairs): each pair's value twice, the interleaved layout diffusers' tables use."""
    return half.repeat_interleave(2, dim=-1)


def _gain(logit_scale: float) -> float:
    return math.sqrt(logit_scale)


def axis_table(dim: int, theta: float, scaling, logit_scale: float, positions: torch.Tensor) -> tuple:
    """cos, sin (n, dim // 2) float32 on the CPU of one axis at `positions` (n,), float64 angles,
    the scaling's attention factor and sqrt(logit_scale) folded in."""
    return axis_cos_sin(positions.detach().to("cpu", torch.float64), dim, theta, scaling, gain=_gain(logit_scale))


def axial_table(
    dims: Sequence[int],
    thetas: Sequence[float],
    scalings: Sequence,
    logit_scale: float,
    coords: torch.Tensor,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Half-width cos, sin (..., seq, sum(dims) // 2) float32 on `device` (default: coords') for
    coords (..., seq, n_axes).

    Each axis has its own theta and scaling (None: as trained); angles in float64 on the CPU;
    sqrt(logit_scale) on every channel, so q.k logits between two tokens that carry the table
    grow by logit_scale.
    """
    cos, sin = axial_cos_sin(coords.detach().to("cpu", torch.float64), dims, thetas, scalings, gain=_gain(logit_scale))
    device = coords.device if device is None else device
    return cos.to(device), sin.to(device)


def grid_table(
    dims: Sequence[int],
    thetas: Sequence[float],
    scalings: Sequence,
    logit_scale: float,
    positions: Sequence[torch.Tensor],
    device,
    full: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin on `device` of a grid whose axis a has the positions `positions[a]` (n_a,), row-major.

    Returns (prod n_a, pairs) half-width tables, or with `full` (prod n_a, 2 pairs) with each pair's
    value twice. Each axis's 1D table is built once on the CPU (float64 angles) and broadcast over
    the grid on `device`, as diffusers' own grid modules do.
    """
    sizes = [len(p) for p in positions]
    cos_parts, sin_parts = [], []
    for axis, (dim, theta, scaling, where) in enumerate(zip(dims, thetas, scalings, positions, strict=True)):
        cos, sin = (t.to(device) for t in axis_table(dim, theta, scaling, logit_scale, where))
        if full:
            cos, sin = full_width(cos), full_width(sin)
        shape = [1] * len(sizes) + [cos.shape[-1]]
        shape[axis] = sizes[axis]
        cos_parts.append(cos.view(shape).expand(*sizes, -1))
        sin_parts.append(sin.view(shape).expand(*sizes, -1))
    width = sum(t.shape[-1] for t in cos_parts)
    return torch.cat(cos_parts, dim=-1).reshape(-1, width), torch.cat(sin_parts, dim=-1).reshape(-1, width)


def ids_table(
    dims: Sequence[int], thetas: Sequence[float], scalings: Sequence, logit_scale: float, ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Full-width cos, sin (seq, 2 pairs) on ids' device for coordinates ids (seq, n_axes), each pair twice.

    Ids that are non-negative integers (Flux's are) take each axis's 1D table over 0 .. max and
    gather its rows: the values of `axial_table`, for far fewer trigonometric evaluations. Other
    ids go through `axial_table` itself. Reading min, max and integrality costs one host sync.
    """
    whole = ids.detach()
    integral = bool(torch.equal(whole, whole.round()) and (whole.numel() == 0 or whole.min() >= 0))
    if not integral:
        cos, sin = axial_table(dims, thetas, scalings, logit_scale, ids)
        return full_width(cos), full_width(sin)
    longest = [int(n) + 1 for n in whole.amax(dim=0).tolist()] if whole.numel() else [1] * len(dims)
    rows = whole.long()
    cos_parts, sin_parts = [], []
    for axis, (dim, theta, scaling) in enumerate(zip(dims, thetas, scalings, strict=True)):
        positions = torch.arange(longest[axis], dtype=torch.float64)
        cos, sin = (full_width(t).to(ids.device) for t in axis_table(dim, theta, scaling, logit_scale, positions))
        cos_parts.append(cos.index_select(0, rows[:, axis]))
        sin_parts.append(sin.index_select(0, rows[:, axis]))
    return torch.cat(cos_parts, dim=-1), torch.cat(sin_parts, dim=-1)


class GivenTableRope(ExtrapolatedRope):
    """An `ExtrapolatedRope` whose tables arrive as the forward argument `family.kind.argument`, built by
    the pipeline (CogVideoX, HunyuanDiT, Lumina-Next, Allegro): before the forward that argument is
    replaced by `self(hidden_states, given)` (`self(given)` where `reads_latent` is False), and left
    as the pipeline gave it where no table was given or the call returns None (at or inside the
    trained grid, the pipeline's own table stays)."""

    reads_latent = True

    def before_forward(self, state: CallState, args: tuple, kwargs: dict, parameters: Sequence[str]):
        name = self.setup.family.kind.argument
        given = None if name is None else argument(name, args, kwargs, parameters)
        if given is None:
            return None  # no table passed (or the rope module is called by the model itself)
        latent = (argument("hidden_states", args, kwargs, parameters),) if self.reads_latent else ()
        table = self(*latent, given)
        return None if table is None else with_argument(name, table, args, kwargs, parameters)


def with_argument(name: str, value, args: tuple, kwargs: dict, parameters: Sequence[str]) -> tuple[tuple, dict]:
    """(args, kwargs) with the forward argument `name` set to `value`, where it was given (by name or position)."""
    position = parameters.index(name)
    if name in kwargs or len(args) <= position:
        return args, {**kwargs, name: value}
    return args[:position] + (value,) + args[position + 1 :], kwargs
