"""Pretrained diffusers models beyond their trained size, one call for every registered family.

    from axialrope.models import apply_extrapolation

    handle = apply_extrapolation(pipe, "dype-yarn")          # or "pi", "ntk", "yarn", ..., an Extrapolation
    image = pipe(prompt, height=2048, width=2048).images[0]
    handle.remove()                                           # the models are exactly as before

The family comes from the model's class (`registry.py`); its rope module is replaced by one of
its rope kind (`ropes/`) returning the family's own table format. At or inside the trained
grid the family's own module computes the table (bit-identical outputs); beyond it each axis gets
the method with s_a = max(1, L_a / L_a_train). A pipeline's every transformer and ControlNet gets
it. Each model carries a call plan (`models/call_plan.py`, as the project's DiT does when sampled):
its forward pre-hook derives the call's own state (its `timestep`, the whole inputs the rope needs,
before context-parallel hooks shard them) for the replacement rope, and its forward hook drops it.

"auto" with a calibration (`axialrope calibrate`'s calibration.json) chooses per call: for each
forward's token grid the rope takes the band of that scale and aspect (`BandChoice`, by the one rule of
`models/extrapolation_bands.py`) and computes what the band's method applied alone computes. Pipeline
extras follow the call's band too: Flux's shift cap caps a pipeline call where its band is dype-*
(docs/diffusers.md). "auto" without a calibration is refused: the families record no default.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from axialrope import Extrapolation
from axialrope.validation import is_int

from ..calibration_file import Calibration, read_calibration
from ..call_plan import AttachedPlan, CallPlan, StepTime, argument, attach, forward_parameters
from ..extrapolation_bands import band_extrapolation, choose_band, extrapolation_scale, grid_aspect
from .family import Family
from .registry import FAMILIES, family_of, methods_for, refusal
from .ropes.base import CallState, ExtrapolatedRope, RopeSetup
from .ropes.references import ReferenceKeys, key_bands
from .spa_attention import install_averaging

HANDLE_ATTRIBUTE = "_axialrope_extrapolation"
DEFAULT_CACHE_SIZE = 8
PIPELINE_MODELS = ("transformer", "transformer_2", "controlnet")  # the models of a pipeline that carry a rope
AUTO = "auto"  # the method chosen per call from a calibration's bands


class ModelPatch:
    """What `apply_extrapolation` changed on one model (kept on it as `model._axialrope_extrapolation`).

    Attributes:
        transformer: the model; family: its `Family`; extrapolation: the method (riflex's k filled in),
        None under "auto" (`extrapolation_for` gives a grid's); trained_grid: per temporal/spatial axis;
        rope: the replacement rope module; time: the latest forward's timestep, used when the rope is called
        on its own; calls: the model's call plan (`RopeCallPlan`), which hands the rope each forward's own
        state; key_hooks: the handles of reference="untwist"'s hooks on the key norms
        (`references.ReferenceKeys`), or none.
    """

    def __init__(
        self,
        transformer: nn.Module,
        family: Family,
        extrapolation: Extrapolation,
        trained_grid: tuple[int, ...],
        rope: ExtrapolatedRope,
        original: nn.Module | None,
        calls: AttachedPlan,
        key_hooks: Sequence = (),
        undo_attention=None,
    ):
        self.transformer, self.family, self.extrapolation = transformer, family, extrapolation
        self.trained_grid, self.rope, self.original, self.calls = trained_grid, rope, original, calls
        self.key_hooks = tuple(key_hooks)
        self.undo_attention = undo_attention  # spa's processor wrappers (`spa_attention.py`), or None

    @property
    def time(self) -> StepTime:
        return self.rope.time

    def extrapolation_for(self, grid: Sequence[int]) -> Extrapolation:
        """The method a call at the token `grid` (per temporal/spatial axis) gets (riflex's k filled in):
        "none" at or inside the trained grid, where the family's own module runs."""
        if self.rope.within_grid(grid):
            return Extrapolation("none")
        return self.rope.method_for(grid)[0]

    @property
    def removed(self) -> bool:
        return vars(self.transformer).get(HANDLE_ATTRIBUTE) is not self

    def check_removable(self) -> None:
        if self.removed:
            raise RuntimeError("this extrapolation was already removed from the model")
        rope_attr = self.family.rope_attr
        if rope_attr is not None:
            current = getattr(self.transformer, rope_attr)
            if current is not self.rope:
                raise RuntimeError(
                    f"{type(self.transformer).__name__}.{rope_attr} was replaced since "
                    "apply_extrapolation; not restoring over it"
                )
            if hasattr(current, "_diffusers_hook"):
                raise RuntimeError(
                    f"diffusers hooks ({hooks_of(current)}) were added to the extrapolated rope module; "
                    "remove them before removing the extrapolation"
                )

    def remove(self) -> None:
        """Restores the family's own rope module and removes the call plan (its hooks)."""
        self.check_removable()
        for hook in self.key_hooks:
            hook.remove()
        self.calls.remove()
        if self.undo_attention is not None:
            self.undo_attention()
        if self.family.rope_attr is not None:
            _set_rope(self.transformer, self.family.rope_attr, self.original)
        del vars(self.transformer)[HANDLE_ATTRIBUTE]


class ExtrapolationHandle:
    """What `apply_extrapolation` changed; `remove()` undoes all of it.

    Attributes:
        transformer, family, extrapolation, trained_grid, rope, time: those of the main model
            (the pipeline's `transformer`); see `ModelPatch`. extrapolation is None under "auto".
        patches: one `ModelPatch` per model changed, the main one first.
        calibration: under "auto", the `Calibration` read (its bands, trained grid); else None.
    """

    def __init__(self, patches: Sequence[ModelPatch], pipeline_undos: list, calibration: Calibration | None = None):
        self.patches = tuple(patches)
        self._pipeline_undos = pipeline_undos
        self.calibration = calibration
        main = self.patches[0]
        self.transformer, self.family, self.extrapolation = main.transformer, main.family, main.extrapolation
        self.trained_grid, self.rope = main.trained_grid, main.rope

    @property
    def time(self) -> StepTime:
        return self.rope.time

    def extrapolation_for(self, grid: Sequence[int]) -> Extrapolation:
        """The method the main model gives a call at the token `grid` (`ModelPatch.extrapolation_for`)."""
        return self.patches[0].extrapolation_for(grid)

    @property
    def removed(self) -> bool:
        return self.patches[0].removed

    def remove(self) -> None:
        """Restores every model's own rope module, removes the hooks and the pipeline changes."""
        for patch in self.patches:
            patch.check_removable()  # all or nothing
        _undo_all(self._pipeline_undos)
        for patch in self.patches:
            patch.remove()

    def __enter__(self) -> ExtrapolationHandle:
        return self

    def __exit__(self, *exc) -> None:
        if not self.removed:
            self.remove()

    def __repr__(self) -> str:
        state = "removed" if self.removed else "active"
        models = f", {len(self.patches)} models" if len(self.patches) > 1 else ""
        method = AUTO if self.extrapolation is None else self.extrapolation.method
        return f"ExtrapolationHandle({self.family.name}, {method!r}, trained_grid={self.trained_grid}{models}, {state})"


def apply_extrapolation(
    pipe_or_transformer,
    method: str | Extrapolation = "none",
    trained_grid: Sequence[int] | None = None,
    calibration=None,
    **options,
) -> ExtrapolationHandle:
    """Gives a diffusers pipeline's models (or one model) an extrapolation method.

    Args:
        pipe_or_transformer: a `DiffusionPipeline` (its `transformer`, `transformer_2`, `controlnet`s)
            or one model of a registered family (`registry.supported_classes()`); a model wrapped by
            `torch.compile` is patched through the module it wraps (`_orig_mod`).
        method: a name of `axialrope.EXTRAPOLATION_METHODS` ("yarn+entropy": with entropy scaling, as the CLI
            takes it), an `Extrapolation`, or "auto": per call, the band of `calibration` (module docstring).
        trained_grid: the trained token grid, (h, w) or (t, h, w) in latent frames after the temporal
            patch; None: the calibration's under "auto", else the family's declared grid for the model's config.
        calibration: "auto" only, and needed there: a calibration.json's path or its content (a dict).
        options: `Extrapolation` fields (beta_fast, riflex_index, entropy_scaling, ...; not with "auto",
            whose bands carry their own), `cache_size` (tables kept, default 8), the family's own (Flux's
            `shift_cap`, Qwen-Image's `dype_variant`, `reference`: where reference images sit beyond the
            trained grid, "cover" or "keep", or "untwist": placed as "cover", their keys' fast pairs
            weakened at every size, `references.py`).

    Returns an `ExtrapolationHandle`; `handle.remove()` restores the models bit for bit.
    Raises TypeError for an unregistered model (naming the supported classes) or an unknown option,
    ValueError for a method the family cannot take (naming those it can, and under "auto" the band), a
    bad trained grid, a calibration that cannot be read or does not fit the model (naming the file), a
    configuration the family cannot extrapolate or a model already extrapolated; nothing changes then.
    """
    pipeline, models = _models_of(pipe_or_transformer)
    main_family = family_of(models[0])
    options = dict(options)
    cache_size = options.pop("cache_size", DEFAULT_CACHE_SIZE)
    if not is_int(cache_size) or cache_size < 1:
        raise ValueError(f"cache_size must be a positive integer, got {cache_size!r}")
    family_options = _family_options(main_family, options)
    calibrated = None
    if isinstance(method, str) and method == AUTO:
        calibrated = _calibration_for(main_family, calibration, trained_grid, options)
        trained_grid, extrapolation = calibrated.trained_grid, Extrapolation("none")  # "none": the trained encoding
    else:
        if calibration is not None:
            raise ValueError(f'calibration is read by method="auto" only; got method {_method_name(method)!r}')
        extrapolation = _as_extrapolation(method, options)
    bands = None if calibrated is None else calibrated.bands
    plans = [
        _prepare(model, family_of(model), extrapolation, trained_grid, cache_size, family_options, index == 0, bands)
        for index, model in enumerate(models)
    ]

    undos: list = []
    patches: list[ModelPatch] = []
    try:
        for extra in main_family.extras:
            value = family_options.get(extra.option)
            method_name, follows = _extra_method(extra, value, extrapolation, plans[0][3])
            follow = {} if follows is None else {"applies": follows}  # an extra that follows the call's band
            undos += extra.install(pipeline, method_name, value, plans[0][2], **follow)
        for model, family, grid, setup, rope in plans:
            patches.append(_install(model, family, grid, setup, rope))
    except BaseException:
        for patch in reversed(patches):
            patch.remove()
        _undo_all(undos)
        raise
    return ExtrapolationHandle(patches, undos, calibrated)


def _method_name(method) -> str:
    return method.method if isinstance(method, Extrapolation) else str(method)


def _calibration_for(family: Family, calibration, trained_grid, options: Mapping) -> Calibration:
    """The calibration "auto" reads, checked against the model's family and the call's trained grid."""
    if calibration is None:
        raise ValueError(
            'method "auto" needs calibration= (the path of a calibration.json that `axialrope calibrate` writes, '
            'or its content); without one pass "none" for the family\'s own behaviour, or a method'
        )
    if options:
        raise TypeError(
            f'method "auto" takes each band\'s own options from the calibration; got {", ".join(sorted(options))}'
        )
    calibrated = read_calibration(calibration, video=family.video)
    where = f"calibration {calibrated.source}"
    if calibrated.family is not None and calibrated.family != family.name:
        raise ValueError(f"{where} was measured on {calibrated.family!r}, this model is {family.name!r}")
    axes = "(t, h, w)" if family.temporal_axis is not None else "(h, w)"
    if len(calibrated.trained_grid) != len(family.planned_axes):
        raise ValueError(
            f"{where}: its trained_grid {list(calibrated.trained_grid)} is not {axes}, the grid of {family.name}"
        )
    if trained_grid is not None and tuple(_trained_grid(family, {}, trained_grid)) != calibrated.trained_grid:
        raise ValueError(
            f"{where}: its bands are relative to trained_grid {list(calibrated.trained_grid)}, but the call gives "
            f"{list(trained_grid)}; leave trained_grid out, or calibrate at that grid"
        )
    return calibrated


def _extra_method(extra, value, extrapolation: Extrapolation, setup: RopeSetup) -> tuple:
    """(method, applies or None): what a pipeline-level extra is installed with. Under "auto" (the main model's
    `setup.choose`) where the bands' methods differ on whether the extra is wanted and `value` does not
    decide, it is installed for a method that wants it, with `applies` telling per call's token grid whether
    that call's band wants it (`ExtraFollowsBand`)."""
    choice = setup.choose
    if choice is None:
        return extrapolation.method, None
    methods = list(dict.fromkeys(method.method for method, _ in choice.resolved))
    wanted = [method for method in methods if extra.wanted(method, value)]
    if not wanted or len(wanted) == len(methods):
        return methods[0], None
    return wanted[0], ExtraFollowsBand(extra, value, choice)


class ExtraFollowsBand:
    """Whether a call's token grid gets a pipeline-level extra (Flux's shift cap) under "auto": whether the
    method of its band (`BandChoice`) wants it. A plain object, so a deep copy or pickle of the pipeline
    carries it."""

    def __init__(self, extra, value, choice: BandChoice):
        self.extra, self.value, self.choice = extra, value, choice

    def __call__(self, grid: Sequence[int]) -> bool:
        return self.extra.wanted(self.choice(grid)[0].method, self.value)


def _models_of(pipe_or_transformer) -> tuple[object, list[nn.Module]]:
    """(pipeline or None, the models to extrapolate, the main one first)."""
    from diffusers import DiffusionPipeline

    if isinstance(pipe_or_transformer, DiffusionPipeline):
        pipe = pipe_or_transformer
        if getattr(pipe, "transformer", None) is None:
            raise TypeError(f"{type(pipe).__name__} has no `transformer` to extrapolate")
        models = []
        for name in PIPELINE_MODELS:
            model = getattr(pipe, name, None)
            for member in getattr(_uncompiled(model), "nets", None) or [model]:  # a multi-ControlNet holds several
                member = _uncompiled(member)
                if isinstance(member, nn.Module) and member not in models:
                    models.append(member)
        return pipe, models
    if isinstance(pipe_or_transformer, nn.Module):
        return None, [_uncompiled(pipe_or_transformer)]
    raise TypeError(
        f"pipe_or_transformer must be a diffusers pipeline or model, got {type(pipe_or_transformer).__name__}"
    )


def _uncompiled(model):
    """The module `torch.compile(model)` wraps (its `_orig_mod`): patching it patches what the compiled
    module runs, which traces the patched module at its next call."""
    from torch._dynamo.eval_frame import OptimizedModule

    return model._orig_mod if isinstance(model, OptimizedModule) else model


def _family_options(family: Family, options: dict) -> dict:
    """Pops the family's own options; an option of other families only is a TypeError."""
    own = {key: options.pop(key) for key in family.options() if key in options}
    for key in list(options):
        holders = [f.title for f in FAMILIES if key in f.options()]
        if holders:
            raise TypeError(f"option {key!r} is for {', '.join(dict.fromkeys(holders))} only, not {family.title}")
    return own


def _as_extrapolation(method, options: dict) -> Extrapolation:
    fields = {f.name for f in dataclasses.fields(Extrapolation)} - {"method"}
    unknown = sorted(set(options) - fields)
    if unknown:
        known = sorted(fields | {"cache_size"} | {o for f in FAMILIES for o in f.options()})
        raise TypeError(f"unknown option {unknown[0]!r}; options are {known}")
    return Extrapolation.from_name(method, **options)  # "yarn+entropy" as the CLI; unknown names: ValueError


def _prepare(
    model: nn.Module,
    family: Family,
    extrapolation: Extrapolation,
    trained_grid,
    cache_size: int,
    family_options: Mapping,
    main: bool,
    bands: Sequence[dict] | None = None,
):
    """Checks one model and builds its replacement rope, changing nothing: (model, family, grid, setup, rope).
    With `bands` ("auto") every band's method is checked and resolved for the model, and the rope chooses
    among them per call (`BandChoice`)."""
    if HANDLE_ATTRIBUTE in vars(model):
        raise ValueError("apply_extrapolation was already applied to this transformer; call handle.remove() first")
    config = model.config
    _check_model(model, family, config)
    _check_method(family, extrapolation)
    grid = _trained_grid(family, config, trained_grid)
    dims, theta = family.rope_axes.resolve(
        vars(getattr(model, family.rope_attr)) if family.rope_axes.on_rope else config
    )
    if len(dims) != len(family.axes):
        raise ValueError(f"{family.title}: the config gives {len(dims)} rope axes, the declaration {len(family.axes)}")
    extrapolation.check_axes([dims[a] for a in family.planned_axes])  # riflex_index beyond the time axis's pairs
    setup = RopeSetup(
        family,
        extrapolation,
        grid,
        dims,
        (theta,) * len(dims),
        cache_size,
        options={k: v for k, v in family_options.items() if k in family.kind.options},
        config=config,
    )
    extrapolation, riflex_off = _resolved(family, config, setup, extrapolation)
    setup = dataclasses.replace(setup, extrapolation=extrapolation, riflex_off=riflex_off)
    if bands is not None:
        resolved = []
        for index, band in enumerate(bands):
            method = band_extrapolation(band)
            try:
                _check_method(family, method)
                method.check_axes([dims[a] for a in family.planned_axes])
            except ValueError as error:
                raise ValueError(f"calibration band {index} {band!r}: {error}") from None
            resolved.append(_resolved(family, config, setup, method))
        setup = dataclasses.replace(setup, choose=BandChoice(bands, grid, resolved))
    original = getattr(model, family.rope_attr) if family.rope_attr else None
    return model, family, grid, setup, family.kind.make_rope(original, setup)


def _resolved(family: Family, config: Mapping, setup: RopeSetup, extrapolation: Extrapolation):
    """(extrapolation with riflex's k filled in, riflex_off) for one model: the published k, or where its
    authors apply none riflex_off (the table as trained), else the kind's rule."""
    if extrapolation.method != "riflex" or extrapolation.riflex_index is not None:
        return extrapolation, False
    published = family.published_riflex(config)
    if published is not None and published.k is None:
        return extrapolation, True
    k = published.k if published is not None else family.kind.riflex_index(setup)
    return dataclasses.replace(extrapolation, riflex_index=k), False


class BandChoice:
    """ "auto"'s method per call for one model: for a token grid beyond the trained one, the band that
    `extrapolation_bands.choose_band` picks by the grid's scale and aspect, as resolved for the model.

    Args:
        bands: the calibration's checked bands; trained_grid: the grid they are relative to (per
            temporal/spatial axis); resolved: per band, (its Extrapolation with riflex's k, riflex_off).

    Called with a token grid (per temporal/spatial axis), returns that band's (Extrapolation, riflex_off).
    """

    def __init__(self, bands: Sequence[dict], trained_grid: Sequence[int], resolved: Sequence[tuple]):
        self.bands, self.trained_grid, self.resolved = tuple(bands), tuple(trained_grid), tuple(resolved)

    def __call__(self, grid: Sequence[int]) -> tuple[Extrapolation, bool]:
        band = choose_band(self.bands, extrapolation_scale(self.trained_grid, grid), grid_aspect(grid))
        return self.resolved[next(i for i, b in enumerate(self.bands) if b is band)]


def _check_model(model: nn.Module, family: Family, config: Mapping) -> None:
    for key, value in family.requires:
        if config.get(key) != value:
            raise ValueError(family.requires_reason)
    if family.rope_attr is None:
        return
    rope = getattr(model, family.rope_attr, None)
    names = [cls.__name__ for cls in type(rope).__mro__]
    if family.rope_classes and not any(name in family.rope_classes for name in names):
        raise ValueError(
            f"{family.title} with {type(rope).__name__} as `{family.rope_attr}` is not supported; "
            f"only {', '.join(family.rope_classes)}"
        )
    if hasattr(rope, "_diffusers_hook"):
        causes = hooks_of(rope)
        raise ValueError(
            f"{type(model).__name__}.{family.rope_attr} carries diffusers hooks ({causes}): call "
            f"apply_extrapolation before enabling {causes}, so they wrap the extrapolated module"
        )


def hooks_of(module: nn.Module) -> str:
    """What put diffusers hooks on a module, by their names in its registry (group offloading, layerwise
    casting, context parallelism, or the hook's own name)."""
    causes = []
    for name in getattr(getattr(module, "_diffusers_hook", None), "hooks", {}) or {}:
        if name.startswith(("cp_input", "cp_output")):
            cause = "context parallelism"
        elif "group_offloading" in name:
            cause = "group offloading"
        elif name == "layerwise_casting":
            cause = "layerwise casting"
        else:
            cause = f"the hook {name!r}"
        causes.append(cause)
    return " and ".join(dict.fromkeys(causes)) or "of unknown origin"


def _trained_grid(family: Family, config: Mapping, trained_grid) -> tuple[int, ...]:
    n_axes = len(family.planned_axes)
    axes = "(t, h, w)" if family.temporal_axis is not None else "(h, w)"
    if trained_grid is None:
        return tuple(family.trained_grid(config).grid)
    if isinstance(trained_grid, (str, bytes)) or not isinstance(trained_grid, Sequence):
        raise ValueError(f"trained_grid must be {axes} token sizes for {family.name}, got {trained_grid!r}")
    if len(trained_grid) != n_axes:
        raise ValueError(f"trained_grid must have {n_axes} axes {axes} for {family.name}, got {tuple(trained_grid)}")
    if any(not is_int(n) or n <= 0 for n in trained_grid):
        raise ValueError(f"trained_grid sizes must be positive integers, got {tuple(trained_grid)}")
    return tuple(int(n) for n in trained_grid)


def _check_method(family: Family, extrapolation: Extrapolation) -> None:
    reason = refusal(family, extrapolation.method, extrapolation.entropy_scaling)
    if reason is not None:
        entropy = " (without entropy scaling)" if family.gain_refused else ""
        raise ValueError(f"{reason}: its methods are {', '.join(methods_for(family))}{entropy}")
    if family.temporal_axis is not None and extrapolation.temporal_axis != family.temporal_axis:
        raise ValueError(
            f"{family.name}'s grid is (t, h, w): temporal_axis must be {family.temporal_axis}, "
            f"got {extrapolation.temporal_axis}"
        )


def _install(model: nn.Module, family: Family, grid, setup: RopeSetup, rope: ExtrapolatedRope) -> ModelPatch:
    bands = key_bands(setup.options) if "reference" in family.kind.options else None
    key_hooks = ReferenceKeys(rope, bands).install(model) if bands is not None else []  # first: it may refuse
    original = None
    if family.rope_attr is not None:
        original = getattr(model, family.rope_attr)
        _set_rope(model, family.rope_attr, rope)
    undo_attention = install_averaging(model, rope) if rope.may_use("spa") else None
    try:
        calls = attach(model, RopeCallPlan(rope, family))
    except BaseException:
        if undo_attention is not None:
            undo_attention()
        raise
    extrapolation = None if setup.choose is not None else setup.extrapolation  # "auto": chosen per call
    patch = ModelPatch(model, family, extrapolation, grid, rope, original, calls, key_hooks, undo_attention)
    vars(model)[HANDLE_ATTRIBUTE] = patch
    return patch


def _set_rope(model: nn.Module, name: str, value) -> None:
    """Puts `value` where a model's rope is: a child module; a plain attribute (Z-Image's RopeEmbedder is a
    plain object, so its replacement is not registered as a child either); or, where the rope is a method
    of the model's class (JoyImage's), an instance attribute shadowing it, which the model's own bound
    method given back drops."""
    if name in model._modules:
        setattr(model, name, value)
    elif not inspect.isfunction(inspect.getattr_static(type(model), name, None)):
        object.__setattr__(model, name, value)
    elif isinstance(value, types.MethodType) and value.__self__ is model:
        vars(model).pop(name, None)
    else:
        vars(model)[name] = value  # not nn.Module.__setattr__, which would register a child the method hides


class RopeCallPlan(CallPlan):
    """A family's call plan: each forward's timestep and the whole inputs its replacement rope (the reader)
    needs, the rope's `before_forward` then given the chance to rewrite the forward's arguments."""

    def __init__(self, rope: ExtrapolatedRope, family: Family):
        self.reader, self.family = rope, family

    def state(self, module, args, kwargs) -> CallState:
        rope, parameters = self.reader, forward_parameters(type(module))
        timestep = argument(self.family.time.argument, args, kwargs, parameters)
        rope.time.set(timestep)  # the latest forward's, for calls of the rope on its own
        latent = None
        if rope.reads_latent:  # sega: the whole latent, before context parallelism splits it
            latent = latent_argument(self.family, args, kwargs, parameters)
        return CallState(self.family.time, timestep, rope.call_inputs(args, kwargs, parameters), latent)

    def inputs(self, state, module, args, kwargs):
        return self.reader.before_forward(state, args, kwargs, forward_parameters(type(module)))


def latent_argument(family: Family, args: tuple, kwargs: dict, parameters: Sequence[str]):
    """The forward's whole latent, before context parallelism splits it, as `axialrope.sega.token_map` takes it:
    (B, C, H, W), (B, C, T, H, W) (also (B, T, C, H, W)) or packed tokens (B, N, D), read where the family's
    `latent` says; ValueError where it was not given."""
    read = family.latent
    latent = argument(read.argument, args, kwargs, parameters)
    if latent is None:
        raise ValueError(f"sega plans each call from its latent: call {family.title} with its `{read.argument}`")
    if read.layout == "list":
        items = list(latent) if isinstance(latent, (list, tuple)) else [latent]
        if len({tuple(item.shape) for item in items}) != 1:
            raise ValueError(f"sega needs {family.title}'s latents at one size, got {[tuple(i.shape) for i in items]}")
        return torch.stack(items)
    if read.layout == "last":
        return latent.movedim(-1, 1)
    return latent


def _undo_all(undos: list) -> None:
    while undos:
        undos.pop()()


__all__ = ["ExtrapolationHandle", "ModelPatch", "apply_extrapolation"]
