"""Pretrained diffusers transformers beyond their trained size, one call for every family.

    from axialrope.models import apply_extrapolation

    pipe = FluxPipeline.from_pretrained(...)
    handle = apply_extrapolation(pipe, "dype-yarn")          # or "pi", "ntk", "yarn", ..., an Extrapolation
    image = pipe(prompt, height=2048, width=2048).images[0]
    handle.remove()                                           # the model is exactly as before

The family is recognised from the transformer's class (Flux, Qwen-Image, Wan, HunyuanVideo,
CogVideoX, LTX-Video; see `families/`). Its own rope module is replaced by one built on the
axialrope core that returns the family's own table format, so the family's attention
processors run unchanged. At or inside the trained grid (and wherever a method leaves the
encoding as trained) the family's own module computes the table, so outputs are bit-identical;
beyond it each axis gets the method with s_a = max(1, L_a / L_a_train).

A forward pre-hook on the transformer reads its `timestep` argument (t in [0, 1], t = 1 pure
noise, converted per family) for the timestep-dependent methods, and sees the forward's whole
inputs before diffusers' context-parallel hooks shard them, so per-axis scales come from the
global grid.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence

from torch import nn

from axialrope import Extrapolation
from axialrope.validation import is_int

from .families import Family, StepTime, family_of

HANDLE_ATTRIBUTE = "_axialrope_extrapolation"
DEFAULT_CACHE_SIZE = 8


class ExtrapolationHandle:
    """What `apply_extrapolation` changed on one transformer; `remove()` undoes all of it.

    Attributes:
        transformer: the diffusers transformer.
        family: its `Family` adapter (`family.name`: "flux", "wan", ...).
        extrapolation: the `Extrapolation` in use (for riflex with the family's k filled in).
        trained_grid: the trained token grid in use, (h, w) or (t, h, w).
        rope: the replacement rope module (for CogVideoX the table builder the pre-hook uses).
        time: the step's diffusion time, as read from the transformer's `timestep`.
    """

    def __init__(self, transformer, family: Family, extrapolation: Extrapolation, trained_grid: tuple[int, ...],
                 rope, time: StepTime):
        self.transformer, self.family, self.extrapolation = transformer, family, extrapolation
        self.trained_grid, self.rope, self.time = trained_grid, rope, time
        self._undo: list = []

    @property
    def removed(self) -> bool:
        return getattr(self.transformer, HANDLE_ATTRIBUTE, None) is not self

    def remove(self) -> None:
        """Restores the family's own rope module, removes the hooks and the pipeline changes."""
        if self.removed:
            raise RuntimeError("this extrapolation was already removed from the model")
        rope_attr = self.family.rope_attr
        if rope_attr is not None:
            current = getattr(self.transformer, rope_attr)
            if current is not self.rope:
                raise RuntimeError(f"{type(self.transformer).__name__}.{rope_attr} was replaced since "
                                   "apply_extrapolation; not restoring over it")
            if hasattr(current, "_diffusers_hook"):
                raise RuntimeError("diffusers hooks (context parallelism?) were added to the extrapolated rope "
                                   "module; remove them before removing the extrapolation")
        _undo_all(self._undo)
        delattr(self.transformer, HANDLE_ATTRIBUTE)

    def __enter__(self) -> ExtrapolationHandle:
        return self

    def __exit__(self, *exc) -> None:
        if not self.removed:
            self.remove()

    def __repr__(self) -> str:
        state = "removed" if self.removed else "active"
        return (f"ExtrapolationHandle({self.family.name}, {self.extrapolation.method!r}, "
                f"trained_grid={self.trained_grid}, {state})")


def apply_extrapolation(pipe_or_transformer, method: str | Extrapolation = "none",
                        trained_grid: Sequence[int] | None = None, **options) -> ExtrapolationHandle:
    """Gives a diffusers pipeline's transformer (or a transformer) an extrapolation method.

    Args:
        pipe_or_transformer: a `DiffusionPipeline` with a `transformer`, or one of the supported
            transformers (Flux, Qwen-Image, Wan, HunyuanVideo, CogVideoX, LTX-Video).
        method: a name of `axialrope.EXTRAPOLATION_METHODS` or an `Extrapolation`.
        trained_grid: the token grid the model was trained at, (h, w) for images, (t, h, w) for
            video (latent frames after the temporal patch); None: the family's default from
            `trained_grids.TRAINED_GRIDS`.
        options: `Extrapolation` fields (beta_fast, dype_lambda_t, riflex_index, entropy_scaling, ...),
            and `cache_size` (tables kept, default 8) and, for Flux, `shift_cap` (None: on with the
            dype-* methods when a pipeline is given, as DyPE's pipeline does).

    Returns:
        An `ExtrapolationHandle`; `handle.remove()` restores the model bit for bit.

    Raises:
        TypeError: not a supported transformer (the message names the supported classes), or an
            unknown option.
        ValueError: a method the family cannot take (riflex on an image model), a trained grid
            with the wrong number of axes or non-positive sizes, a model already extrapolated.
        Nothing is changed when it raises.
    """
    pipeline, transformer = _split(pipe_or_transformer)
    family = family_of(transformer)
    if getattr(transformer, HANDLE_ATTRIBUTE, None) is not None:
        raise ValueError("apply_extrapolation was already applied to this transformer; call handle.remove() first")
    options = dict(options)
    cache_size = options.pop("cache_size", DEFAULT_CACHE_SIZE)
    if not is_int(cache_size) or cache_size < 1:
        raise ValueError(f"cache_size must be a positive integer, got {cache_size!r}")
    family_options = {k: options.pop(k) for k in ("shift_cap",) if k in options}
    if family_options and family.name != "flux":
        raise TypeError(f"option {next(iter(family_options))!r} is for Flux only, not {family.name}")
    extrapolation = _as_extrapolation(method, options)
    grid = _trained_grid(family, transformer, trained_grid)
    _check_method(family, extrapolation)
    family.check(transformer)
    if extrapolation.method == "riflex" and extrapolation.riflex_index is None:
        extrapolation = dataclasses.replace(extrapolation, riflex_index=family.riflex_index(transformer, grid))

    time = StepTime(family.timestep_scale)
    rope = family.make_rope(transformer, extrapolation, grid, time, cache_size)
    handle = ExtrapolationHandle(transformer, family, extrapolation, grid, rope, time)
    try:
        handle._undo += family.install_extras(pipeline, extrapolation, family_options)
        if family.rope_attr is not None:
            original = getattr(transformer, family.rope_attr)
            setattr(transformer, family.rope_attr, rope)
            handle._undo.append(lambda: setattr(transformer, family.rope_attr, original))
        hook = transformer.register_forward_pre_hook(_pre_forward(family, rope, time, transformer), with_kwargs=True)
        handle._undo.append(hook.remove)
        setattr(transformer, HANDLE_ATTRIBUTE, handle)
    except BaseException:
        _undo_all(handle._undo)
        raise
    return handle


def _split(pipe_or_transformer):
    """(pipeline or None, transformer)."""
    from diffusers import DiffusionPipeline

    if isinstance(pipe_or_transformer, DiffusionPipeline):
        transformer = getattr(pipe_or_transformer, "transformer", None)
        if transformer is None:
            raise TypeError(f"{type(pipe_or_transformer).__name__} has no `transformer` to extrapolate")
        return pipe_or_transformer, transformer
    if isinstance(pipe_or_transformer, nn.Module):
        return None, pipe_or_transformer
    raise TypeError(f"pipe_or_transformer must be a diffusers pipeline or transformer, got "
                    f"{type(pipe_or_transformer).__name__}")


def _as_extrapolation(method, options: dict) -> Extrapolation:
    fields = {f.name for f in dataclasses.fields(Extrapolation)} - {"method"}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r}; options are {sorted(fields | {'cache_size', 'shift_cap'})}")
    if isinstance(method, Extrapolation):
        return dataclasses.replace(method, **options) if options else method
    if not isinstance(method, str):
        raise TypeError(f"method must be a method name or an axialrope.Extrapolation, got {method!r}")
    return Extrapolation(method, **options)  # unknown names: ValueError listing the methods


def _trained_grid(family: Family, transformer, trained_grid) -> tuple[int, ...]:
    n_axes = 3 if family.video else 2
    axes = "(t, h, w)" if family.video else "(h, w)"
    if trained_grid is None:
        return tuple(family.trained_grid(transformer).grid)
    if isinstance(trained_grid, (str, bytes)) or not isinstance(trained_grid, Sequence):
        raise ValueError(f"trained_grid must be {axes} token sizes for {family.name}, got {trained_grid!r}")
    if len(trained_grid) != n_axes:
        raise ValueError(f"trained_grid must have {n_axes} axes {axes} for {family.name}, got {tuple(trained_grid)}")
    if any(not is_int(n) or n <= 0 for n in trained_grid):
        raise ValueError(f"trained_grid sizes must be positive integers, got {tuple(trained_grid)}")
    return tuple(trained_grid)


def _check_method(family: Family, extrapolation: Extrapolation) -> None:
    if extrapolation.method == "riflex" and not family.video:
        raise ValueError(f"riflex extrapolates video length; {family.name} is an image model")
    if family.video and extrapolation.temporal_axis != 0:
        raise ValueError(f"{family.name}'s grid is (t, h, w): temporal_axis must be 0, "
                         f"got {extrapolation.temporal_axis}")


def _pre_forward(family: Family, rope, time: StepTime, transformer):
    """The transformer's forward pre-hook: passes the timestep on, then the family's own step."""
    parameters = list(inspect.signature(type(transformer).forward).parameters)[1:]  # after self
    position = parameters.index("timestep") if "timestep" in parameters else None

    def hook(module, args, kwargs):
        if "timestep" in kwargs:
            time.set(kwargs["timestep"])
        else:
            time.set(args[position] if position is not None and len(args) > position else None)
        return family.before_forward(rope, args, kwargs)

    return hook


def _undo_all(undos: list) -> None:
    while undos:
        undos.pop()()


__all__ = ["ExtrapolationHandle", "apply_extrapolation"]
