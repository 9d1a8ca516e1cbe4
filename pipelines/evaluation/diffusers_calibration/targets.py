"""What a calibration of a diffusers pipeline tries: its target sizes and its method variants, checked up front.

    geometry = Geometry.of(pipe, trained_grid=None)     # pixels per token, the trained grid and size
    targets = geometry.targets(sizes=["1024x2048"], scales=None, frames=None)
    variants = family_variants(family, methods=None, search=True, riflex_k=4)

A token of an image family covers `spatial` x `spatial` pixels: the VAE's factor times the patch the transformer
gathers (or the pipeline: Flux and Qwen-Image pack latents 2 x 2, LTX-Video by its `transformer_*_patch_size`);
the tests check this rule against the grid the transformer sees for Flux, Qwen-Image and Wan. A video's latent
frame covers `temporal` frames after the first, and a token `patch_t` latent frames. Sizes must be whole tokens;
every target lies at or beyond the trained size on each axis and differs from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from axialrope import Extrapolation
from axialrope.validation import is_int, is_real

from ...limits import LARGEST_SIDE

MAX_SCALE = 16.0
SIZE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
# --search: the settings the methods' authors leave to the user, each tried on its own beside the default
SEARCH_GRID: dict[str, tuple[tuple[str, tuple], ...]] = {
    "dype_lambda_t": (("dype_lambda_t", (1.0, 4.0)),),  # DyPE's exponent of t in kappa(t) (default 2)
    "beta": (("beta_fast", (16.0, 64.0)), ("beta_slow", (0.5, 2.0))),  # YaRN's ramp (default 32, 1)
}


@dataclass(frozen=True)
class Target:
    """One size to calibrate at: pixels (h, w), frames (None for images) and its token grid."""

    height: int
    width: int
    frames: int | None
    grid: tuple[int, ...]

    @property
    def name(self) -> str:
        """ "HxW", or "FxHxW" for video."""
        return f"{self.height}x{self.width}" if self.frames is None else f"{self.frames}x{self.height}x{self.width}"

    @property
    def aspect(self) -> float:
        return self.height / self.width

    def scale(self, trained_grid: Sequence[int]) -> float:
        """The largest ratio over the axes of this grid to the trained one (the scale the bands count)."""
        return max(n / t for n, t in zip(self.grid, trained_grid, strict=True))


@dataclass(frozen=True)
class Geometry:
    """A pipeline's pixels per token and trained size.

    spatial: pixels per token a side; temporal, patch_t: frames per latent frame and latent frames per token
    (video; None for images); trained_grid: tokens (h, w) or (t, h, w); name: the pipeline class."""

    spatial: int
    temporal: int | None
    patch_t: int | None
    trained_grid: tuple[int, ...]
    name: str = ""

    @classmethod
    def of(cls, pipe, trained_grid: Sequence[int] | None, video: bool, family) -> Geometry:
        """The geometry of `pipe` (its VAE's factors, the transformer's patch) with `trained_grid` (None: the
        family's declared one); ValueError naming trained_grid for a grid of the wrong length or values."""
        config = pipe.transformer.config
        vae = getattr(pipe, "vae_scale_factor_spatial", None) or getattr(pipe, "vae_scale_factor", None) or 8
        patch = config.get("patch_size", 1) or 1
        patch_t = config.get("patch_size_t", None)
        if isinstance(patch, (list, tuple)):
            patch_t, patch = (patch[0] if len(patch) == 3 else patch_t), patch[-1]
        if getattr(pipe, "transformer_spatial_patch_size", None):  # LTX-Video's pipeline patches the latents
            patch = pipe.transformer_spatial_patch_size
            patch_t = getattr(pipe, "transformer_temporal_patch_size", patch_t)
        elif hasattr(type(pipe), "_pack_latents"):  # Flux's, Qwen-Image's: the pipeline packs 2 x 2 latents a token
            patch = 2
        axes = 3 if video else 2
        if trained_grid is None:
            trained_grid = family.trained_grid(config).grid
        if (
            isinstance(trained_grid, (str, bytes))
            or not isinstance(trained_grid, Sequence)
            or len(trained_grid) != axes
            or any(not is_int(n) or n <= 0 for n in trained_grid)
        ):
            shape = "T H W" if video else "H W"
            raise ValueError(f"trained_grid must be {axes} positive token counts ({shape}), got {trained_grid!r}")
        temporal = int(getattr(pipe, "vae_scale_factor_temporal", 1) or 1) if video else None
        return cls(
            int(vae) * int(patch),
            temporal,
            int(patch_t or 1) if video else None,
            tuple(int(n) for n in trained_grid),
            type(pipe).__name__,
        )

    @property
    def video(self) -> bool:
        return self.temporal is not None

    @property
    def trained_size(self) -> tuple[int, int]:
        return self.trained_grid[-2] * self.spatial, self.trained_grid[-1] * self.spatial

    @property
    def trained_frames(self) -> int | None:
        return None if not self.video else (self.trained_grid[0] * self.patch_t - 1) * self.temporal + 1

    @property
    def trained(self) -> Target:
        return Target(*self.trained_size, self.trained_frames, self.trained_grid)

    def target(self, height: int, width: int, frames: int | None, argument: str) -> Target:
        """The target at these pixels; ValueError naming `argument` unless they are whole tokens."""
        for side in (height, width):
            if not is_int(side) or side <= 0 or side > LARGEST_SIDE or side % self.spatial:
                raise ValueError(
                    f"{argument} {height}x{width}: each side must be a positive multiple of {self.spatial} pixels "
                    f"({self.name}: VAE factor x patch) up to {LARGEST_SIDE}"
                )
        grid = (height // self.spatial, width // self.spatial)
        if not self.video:
            return Target(height, width, None, grid)
        step = self.temporal * self.patch_t
        if not is_int(frames) or frames < 1 or (frames - 1) % step:
            raise ValueError(
                f"--frames {frames}: must be 1 + a multiple of {step} ({self.name}: {self.temporal} frames a latent "
                f"frame, {self.patch_t} latent frame(s) a token)"
            )
        return Target(height, width, frames, (((frames - 1) // self.temporal + 1) // self.patch_t, *grid))

    def targets(self, sizes: Sequence[str] | None, scales: Sequence[float] | None, frames) -> list[Target]:
        """The targets of `sizes` ("HxW") or `scales` (of the trained size; neither: the trained size, for
        `frames` alone), times `frames` (video), checked, in order of scale."""
        if sizes is not None and scales is not None:
            raise ValueError("give --sizes or --scales, not both")
        if frames is not None and not self.video:
            raise ValueError(f"--frames given, but {self.name} makes images")
        frames = [self.trained_frames] if frames is None else _as_list(frames, "--frames")
        pixels = [self.trained_size]
        if sizes is not None:
            pixels = [parse_size(size) for size in _as_list(sizes, "--sizes")]
        elif scales is not None:
            pixels = [self._scaled(scale) for scale in _as_list(scales, "--scales")]
        argument = "--sizes" if sizes is not None else "--scales"
        found: list[Target] = []
        for height, width in pixels:
            for count in frames if self.video else [None]:
                target = self.target(height, width, count, argument)
                if any(n < t for n, t in zip(target.grid, self.trained_grid, strict=True)):
                    raise ValueError(
                        f"{argument} {target.name}: below the trained {self.trained.name} on an axis (tokens "
                        f"{target.grid} against {self.trained_grid}); calibration is for sizes beyond it"
                    )
                if target.grid == self.trained_grid:
                    raise ValueError(f"{argument} {target.name}: the trained size itself; give a larger one")
                if target in found:
                    raise ValueError(f"{argument}: {target.name} is given twice")
                found.append(target)
        return sorted(found, key=lambda t: (t.scale(self.trained_grid), t.aspect, t.grid))

    def _scaled(self, scale) -> tuple[int, int]:
        if not is_real(scale) or not math.isfinite(scale) or not 1 < scale <= MAX_SCALE:
            raise ValueError(f"--scales: each must be a number above 1 and at most {MAX_SCALE:g}, got {scale!r}")
        return tuple(max(self.spatial, round(side * scale / self.spatial) * self.spatial) for side in self.trained_size)


def _as_list(values, argument: str) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise ValueError(f"{argument} must be a non-empty list, got {values!r}")
    return list(values)


def parse_size(text) -> tuple[int, int]:
    """ "HxW" -> (h, w); ValueError naming --sizes otherwise."""
    if isinstance(text, (tuple, list)) and len(text) == 2 and all(is_int(n) for n in text):
        return int(text[0]), int(text[1])
    match = SIZE.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"--sizes: expected HEIGHTxWIDTH in pixels such as 1024x1536, got {text!r}")
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class Variant:
    """A method to try: name, entropy scaling and the options set by --search ({} for the defaults)."""

    method: str
    entropy_scaling: bool = False
    options: dict = field(default_factory=dict, hash=False, compare=True)

    @property
    def label(self) -> str:
        """ "yarn+entropy", "dype-yarn dype_lambda_t=4"."""
        name = self.method + ("+entropy" if self.entropy_scaling else "")
        return " ".join([name, *(f"{key}={_shown(value)}" for key, value in self.options.items())])

    @property
    def extrapolation(self) -> Extrapolation:
        return Extrapolation.from_name(self.method, entropy_scaling=self.entropy_scaling, **self.options)

    def to_dict(self) -> dict:
        return {"method": self.method, "entropy_scaling": self.entropy_scaling, "options": dict(self.options)}


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def family_variants(family, methods: Sequence[str] | None, search: bool, riflex_k: int | None = None) -> list[Variant]:
    """The variants of `family`'s methods (`methods`: a subset by label, such as "yarn" or "pi+entropy"; None:
    every method it accepts, without and with entropy scaling where it takes a gain); with `search`, also each
    variant's settings of SEARCH_GRID and RIFLEx's k - 1 and k + 1 around `riflex_k` (the model's own).

    ValueError naming --methods for a method the family refuses (the registry's rule) or an unknown name."""
    from axialrope.models.integrations.registry import methods_for, refusal  # heavy: keeps --help fast

    accepted = methods_for(family)
    if methods is None:
        entropy = (False,) if family.gain_refused else (False, True)
        bases = [Variant(m, e) for m in accepted for e in entropy]
    else:
        bases = []
        for label in _as_list(methods, "--methods"):
            try:
                parsed = Extrapolation.from_name(label)
            except (TypeError, ValueError) as error:
                raise ValueError(f"--methods {label!r}: {error}") from None
            reason = refusal(family, parsed.method, parsed.entropy_scaling)
            if reason is not None:
                raise ValueError(f"--methods {label!r}: {reason}; {family.title} takes {', '.join(accepted)}")
            variant = Variant(parsed.method, parsed.entropy_scaling)
            if variant not in bases:
                bases.append(variant)
    variants = list(bases)
    if search:
        for base in bases:
            variants += [Variant(base.method, base.entropy_scaling, options) for options in _searched(base, riflex_k)]
    return variants


def _searched(base: Variant, riflex_k: int | None) -> list[dict]:
    """The option sets --search tries for one variant, each one setting changed from its default."""
    from axialrope.extrapolation import METHOD_OPTIONS

    reads = METHOD_OPTIONS[base.method]
    found = []
    for settings in SEARCH_GRID.values():
        for name, values in settings:
            if name in reads:
                found += [{name: value} for value in values]
    if "riflex_index" in reads and riflex_k is not None:
        found += [{"riflex_index": k} for k in (riflex_k - 1, riflex_k + 1) if k >= 1]
    return found


__all__ = ["SEARCH_GRID", "Geometry", "Target", "Variant", "family_variants", "parse_size"]
