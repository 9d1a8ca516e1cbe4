"""DyPE's cap of Flux's schedule shift, installed on a pipeline's scheduler by `apply_extrapolation`.

DyPE's Flux pipeline computes mu with max_image_seq_len set to the image's own sequence length,
which makes mu = max_shift at any size. The cap does that for every image beyond the trained
grid on any axis (so a non-square size with fewer tokens than the schedule's line end is capped
too) and leaves mu alone within the trained grid, where every method is the trained encoding.
The grid comes from the pipeline's `prepare_latents(height, width, ...)` of the same call, held
in a context variable; a `set_timesteps` outside a pipeline call caps only a mu above max_shift.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

_LATENT_GRID: ContextVar[tuple[int, ...] | None] = ContextVar("axialrope_flux_latent_grid", default=None)


def capped_shift(
    mu: float | None, config: Mapping, grid: Sequence[int] | None = None, trained_grid: Sequence[int] | None = None
) -> float | None:
    """DyPE's shift for a schedule diffusers gave `mu`.

    With the call's token grid: beyond the trained grid on any axis, diffusers' calculate_shift with
    max_seq_len = the image's own length (= max_shift), as their pipeline computes it; within it,
    `mu`. Without a grid: the same for a mu above max_shift (the length read back from mu), else `mu`.
    """
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    base_len, max_len = config.get("base_image_seq_len", 256), config.get("max_image_seq_len", 4096)
    base_shift, max_shift = config.get("base_shift", 0.5), config.get("max_shift", 1.15)
    if mu is None:
        return mu
    if grid is not None and trained_grid is not None:
        if all(n <= trained for n, trained in zip(grid, trained_grid, strict=True)):
            return mu
        seq_len = 1
        for n in grid:
            seq_len *= int(n)
    elif mu > max_shift:  # the image's length from diffusers' linear mu (an integer: latent tokens)
        seq_len = round(base_len + (mu - base_shift) * (max_len - base_len) / (max_shift - base_shift))
    else:
        return mu
    if seq_len == base_len:  # their line through one point: its limit
        return max_shift
    return calculate_shift(seq_len, base_len, seq_len, base_shift, max_shift)


@dataclass(frozen=True)
class FluxShiftCap:
    """The `shift_cap` option of Flux pipelines: None (on with the dype-* methods), True, False."""

    option: str = "shift_cap"
    patch: int = 2  # Flux packs 2 x 2 latent pixels into a token

    def install(self, pipeline, method: str, value, trained_grid: Sequence[int]) -> list[Callable[[], None]]:
        """Wraps the scheduler's `set_timesteps` (and `prepare_latents`, for the grid); returns the undos."""
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"shift_cap must be True, False or None, got {value!r}")
        wanted = method.startswith("dype-") if value is None else value
        if not wanted:
            return []
        scheduler = getattr(pipeline, "scheduler", None)
        if scheduler is None or not hasattr(scheduler, "set_timesteps"):
            if value:
                raise ValueError(
                    "shift_cap=True needs the pipeline (its scheduler's shift is capped); "
                    "pass the pipeline, not its transformer"
                )
            return []  # a bare transformer: there is no schedule to cap
        trained = tuple(trained_grid)
        set_timesteps = scheduler.set_timesteps

        @functools.wraps(set_timesteps)  # retrieve_timesteps inspects the signature for `sigmas`
        def capped_set_timesteps(*args, **kwargs):
            grid = _LATENT_GRID.get()
            _LATENT_GRID.set(None)  # one call's grid serves that call's schedule only
            if kwargs.get("mu") is not None:
                kwargs["mu"] = capped_shift(kwargs["mu"], scheduler.config, grid, trained if grid else None)
            return set_timesteps(*args, **kwargs)

        undos = [_replace(scheduler, "set_timesteps", capped_set_timesteps)]
        prepare = getattr(pipeline, "prepare_latents", None)
        if prepare is not None:
            signature = inspect.signature(prepare)
            factor = getattr(pipeline, "vae_scale_factor", 8) * self.patch

            @functools.wraps(prepare)
            def recording_prepare_latents(*args, **kwargs):
                bound = signature.bind_partial(*args, **kwargs).arguments
                if bound.get("height") is not None and bound.get("width") is not None:
                    _LATENT_GRID.set((int(bound["height"]) // factor, int(bound["width"]) // factor))
                return prepare(*args, **kwargs)

            undos.append(_replace(pipeline, "prepare_latents", recording_prepare_latents))
        return undos


def _replace(owner, name: str, value) -> Callable[[], None]:
    """Sets an instance attribute over a method; returns its undo (the class's method again, or the
    instance's own attribute if it had one)."""
    had_own = name in vars(owner)
    original = vars(owner).get(name)
    setattr(owner, name, value)

    def undo():
        if had_own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)

    return undo
