"""DyPE's cap of Flux's schedule shift, installed on a pipeline by `apply_extrapolation`.

DyPE's Flux pipeline computes mu with max_image_seq_len set to the image's own sequence length,
which makes mu = max_shift at any size. The cap does that for every image beyond the trained
grid on any axis (so a non-square size with fewer tokens than the schedule's line end is capped
too) and leaves mu alone within the trained grid, where every method is the trained encoding.

Two callable objects, each set on the instance it belongs to and holding it (so a deep copy or a
pickle of the pipeline carries them bound to the copies, never to the originals):
- `RecordingCheckInputs` on the pipeline: every Flux pipeline checks its inputs with the call's own
  height and width before it sets its schedule or prepares its latents; the call's token grid is
  recorded there, for that call's scheduler, and the cap put on the pipeline's scheduler again if it
  was replaced since (`pipe.scheduler = ...`).
- `CappedSetTimesteps` on the scheduler: `set_timesteps(mu=...)` takes the grid recorded for it (once:
  a grid never serves a second schedule) and caps mu by it. Without one (a call outside a patched
  pipeline, e.g. one made by `from_pipe` sharing the scheduler) the image's token count is read back
  from mu and an image with more tokens than the trained grid is capped.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

# (the scheduler the grid is for, the grid in tokens) of the pipeline call under way in this context
_CALL_GRID: ContextVar[tuple[object, tuple[int, ...]] | None] = ContextVar("axialrope_flux_call_grid", default=None)


def capped_shift(
    mu: float | None, config: Mapping, grid: Sequence[int] | None = None, trained_grid: Sequence[int] | None = None
) -> float | None:
    """DyPE's shift for a schedule diffusers gave `mu`.

    With the call's token grid: beyond the trained grid on any axis, diffusers' calculate_shift with
    max_seq_len = the image's own length (= max_shift), as their pipeline computes it; within it,
    `mu`. Without a grid the image's length is read back from diffusers' linear mu: capped where it
    exceeds the trained grid's token count (without a trained grid: where mu exceeds max_shift).
    """
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    base_len, max_len = config.get("base_image_seq_len", 256), config.get("max_image_seq_len", 4096)
    base_shift, max_shift = config.get("base_shift", 0.5), config.get("max_shift", 1.15)
    if mu is None:
        return mu
    if grid is not None and trained_grid is not None:
        if all(n <= trained for n, trained in zip(grid, trained_grid, strict=True)):
            return mu
        seq_len = math.prod(int(n) for n in grid)
    else:  # the image's length from diffusers' linear mu (an integer: latent tokens)
        seq_len = round(base_len + (mu - base_shift) * (max_len - base_len) / (max_shift - base_shift))
        within = seq_len <= math.prod(trained_grid) if trained_grid is not None else mu <= max_shift
        if within:
            return mu
    if seq_len == base_len:  # their line through one point: its limit
        return max_shift
    return calculate_shift(seq_len, base_len, seq_len, base_shift, max_shift)


class CappedSetTimesteps:
    """`scheduler.set_timesteps` with DyPE's cap (module docstring), set on the scheduler it holds.

    original: the scheduler's own instance attribute it replaced, or None (then the class's method).
    """

    def __init__(self, scheduler, trained_grid: Sequence[int], original: Callable | None = None):
        self.scheduler, self.trained_grid, self.original = scheduler, tuple(trained_grid), original

    def method(self) -> Callable:
        """The set_timesteps it caps, bound to its scheduler."""
        if self.original is not None:
            return self.original
        return type(self.scheduler).set_timesteps.__get__(self.scheduler)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.method())  # diffusers' retrieve_timesteps looks for `sigmas` in it

    def __call__(self, *args, **kwargs):
        grid = take_grid(self.scheduler)
        if kwargs.get("mu") is not None:
            kwargs["mu"] = capped_shift(kwargs["mu"], self.scheduler.config, grid, self.trained_grid)
        return self.method()(*args, **kwargs)


class RecordingCheckInputs:
    """`pipeline.check_inputs`, set on the pipeline it holds: after the pipeline's own check passes it records
    the call's token grid, height // factor by width // factor, for the pipeline's scheduler, on which it
    puts the cap again where the scheduler was replaced (`installed` lists the schedulers it capped so).

    factor: pixels per token (the VAE's scale times Flux's 2 x 2 packing).
    """

    def __init__(self, pipeline, trained_grid: Sequence[int], factor: int, original: Callable | None = None):
        self.pipeline, self.trained_grid, self.factor, self.original = pipeline, tuple(trained_grid), factor, original
        self.installed: list = []

    def method(self) -> Callable:
        if self.original is not None:
            return self.original
        return type(self.pipeline).check_inputs.__get__(self.pipeline)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.method())

    def __call__(self, *args, **kwargs):
        method = self.method()
        result = method(*args, **kwargs)
        scheduler = self.pipeline.scheduler
        if not is_capped(scheduler):  # replaced since apply_extrapolation: the cap goes with the pipeline
            install(scheduler, self.trained_grid)
            self.installed.append(scheduler)
        bound = inspect.signature(method).bind_partial(*args, **kwargs).arguments
        height, width = bound.get("height"), bound.get("width")
        grid = None if height is None or width is None else (int(height) // self.factor, int(width) // self.factor)
        _CALL_GRID.set(None if grid is None else (scheduler, grid))
        return result


def take_grid(scheduler) -> tuple[int, ...] | None:
    """The grid recorded for `scheduler` by the pipeline call under way, dropped once taken; None if none."""
    recorded = _CALL_GRID.get()
    if recorded is None or recorded[0] is not scheduler:
        return None
    _CALL_GRID.set(None)
    return recorded[1]


def is_capped(scheduler) -> bool:
    return isinstance(vars(scheduler).get("set_timesteps"), CappedSetTimesteps)


def install(scheduler, trained_grid: Sequence[int]) -> None:
    vars(scheduler)["set_timesteps"] = CappedSetTimesteps(scheduler, trained_grid, vars(scheduler).get("set_timesteps"))


def uninstall(scheduler) -> None:
    """Puts back what `install` replaced (the class's method, or the instance's own attribute)."""
    capped = vars(scheduler).get("set_timesteps")
    if isinstance(capped, CappedSetTimesteps):
        if capped.original is None:
            del vars(scheduler)["set_timesteps"]
        else:
            vars(scheduler)["set_timesteps"] = capped.original


@dataclass(frozen=True)
class FluxShiftCap:
    """The `shift_cap` option of Flux pipelines: None (on with the dype-* methods), True, False."""

    option: str = "shift_cap"
    patch: int = 2  # Flux packs 2 x 2 latent pixels into a token

    def install(self, pipeline, method: str, value, trained_grid: Sequence[int]) -> list[Callable[[], None]]:
        """Caps the pipeline's scheduler and records each call's grid (module docstring); returns the undo."""
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
        if is_capped(scheduler):
            raise ValueError(
                f"{type(pipeline).__name__}'s scheduler already carries a shift cap (another patched pipeline "
                "shares it); remove that extrapolation first"
            )
        install(scheduler, trained_grid)
        factor = getattr(pipeline, "vae_scale_factor", 8) * self.patch
        recorder = RecordingCheckInputs(pipeline, trained_grid, factor, vars(pipeline).get("check_inputs"))
        vars(pipeline)["check_inputs"] = recorder

        def undo():
            if vars(pipeline).get("check_inputs") is recorder:
                if recorder.original is None:
                    del vars(pipeline)["check_inputs"]
                else:
                    vars(pipeline)["check_inputs"] = recorder.original
            for capped in (scheduler, *recorder.installed, pipeline.scheduler):
                uninstall(capped)

        return [undo]
