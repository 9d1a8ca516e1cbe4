"""FluxPosEmbed and its copies (Chroma, LongCat-Image, Ovis-Image, Krea2, Bria, Flux.2, Flux3, ...): ids-based ropes.

The rope is called as `rope(ids)` with ids (seq, n_axes) float coordinates and returns cos, sin
(seq, sum(dims)) float32, each pair's value twice (interleaved layout), from float64 angles.
The transformer receives the ids as forward arguments (Flux: `img_ids`, `txt_ids`) and calls the
rope once on cat(text ids, image ids) or once per argument (Flux.2, Flux3). An index axis tells
the images apart: the generated image's rows carry `output_index` on it, each reference image
(Kontext, Flux.2, BriaFibo-Edit, LongCat-Image-Edit) another value. The replacement keeps reference
axes as trained and gives the temporal and spatial columns the method, with per axis
s_a = max(1, L_a / L_a_train), L_a the generated image's extent in tokens (the `reference` option:
"cover" maps each reference onto that extent, `references.py`; "keep" leaves the pipeline's
positions and measures all images). Extents come from the forward's whole ids as the transformer
received them: under context parallelism the rope sees a shard of the ids, while the transformer's
forward pre-hook sees them all.

Time: FluxPipeline passes the transformer timestep = sigma (t / 1000), which the transformer
multiplies by 1000 itself, so t = timestep. DyPE's pipeline also caps the schedule's shift
(`FluxShiftCap` below, the `shift_cap` option); the copies keep their pipelines' own schedules.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, argument, ids_table, plan_key, tensor_key
from .references import Extent, cover_map, reference_rule, refuse_untwist

# -- DyPE's cap of Flux's schedule shift ------------------------------------------------------------
# DyPE's cap of Flux's schedule shift, installed on a pipeline by `apply_extrapolation`.
#
# DyPE's Flux pipeline computes mu with max_image_seq_len set to the image's own sequence length,
# which makes mu = max_shift at any size. The cap does that for every image beyond the trained
# grid on any axis (so a non-square size with fewer tokens than the schedule's line end is capped
# too) and leaves mu alone within the trained grid, where every method is the trained encoding.
#
# Two callable objects, each set on the instance it belongs to and holding it (so a deep copy or a
# pickle of the pipeline carries them bound to the copies, never to the originals):
# - `RecordingCheckInputs` on the pipeline: every Flux pipeline checks its inputs with the call's own
#   height and width before it sets its schedule or prepares its latents; the call's token grid is
#   recorded there, for that call's scheduler, and the cap put on the pipeline's scheduler again if it
#   was replaced since (`pipe.scheduler = ...`).
# - `CappedSetTimesteps` on the scheduler: `set_timesteps(mu=...)` takes the grid recorded for it (once:
#   a grid never serves a second schedule) and caps mu by it. Without one (a call outside a patched
#   pipeline, e.g. one made by `from_pipe` sharing the scheduler) the image's token count is read back
#   from mu and an image with more tokens than the trained grid is capped.
# Under `auto` with bands of which some want the cap and some not, `applies` says per call whether its
# grid's band wants it; such a call needs its grid recorded (a call of the patched pipeline).

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
    applies: None (every call beyond the trained grid is capped), or a callable telling for a call's token
        grid whether its method takes the cap (`auto` with bands that differ on it).
    """

    def __init__(
        self, scheduler, trained_grid: Sequence[int], original: Callable | None = None, applies: Callable | None = None
    ):
        self.scheduler, self.trained_grid, self.original = scheduler, tuple(trained_grid), original
        self.applies = applies

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
        if kwargs.get("mu") is not None and self._applies(grid):
            kwargs["mu"] = capped_shift(kwargs["mu"], self.scheduler.config, grid, self.trained_grid)
        return self.method()(*args, **kwargs)

    def _applies(self, grid) -> bool:
        if self.applies is None:
            return True
        if grid is None:
            raise ValueError(
                "this scheduler's shift cap follows each call's band of an `auto` calibration, which needs the "
                "call's size, recorded only by the pipeline apply_extrapolation patched (not one sharing its "
                "scheduler, e.g. made by from_pipe): sample through that pipeline, or apply with shift_cap=True "
                "or shift_cap=False"
            )
        return bool(self.applies(tuple(grid)))


class RecordingCheckInputs:
    """`pipeline.check_inputs`, set on the pipeline it holds: after the pipeline's own check passes it records
    the call's token grid, height // factor by width // factor, for the pipeline's scheduler, on which it
    puts the cap again where the scheduler was replaced (`installed` lists the schedulers it capped so).

    factor: pixels per token (the VAE's scale times Flux's 2 x 2 packing).
    """

    def __init__(
        self,
        pipeline,
        trained_grid: Sequence[int],
        factor: int,
        original: Callable | None = None,
        applies: Callable | None = None,
    ):
        self.pipeline, self.trained_grid, self.factor, self.original = pipeline, tuple(trained_grid), factor, original
        self.applies = applies
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
            install(scheduler, self.trained_grid, self.applies)
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


def install(scheduler, trained_grid: Sequence[int], applies: Callable | None = None) -> None:
    original = vars(scheduler).get("set_timesteps")
    vars(scheduler)["set_timesteps"] = CappedSetTimesteps(scheduler, trained_grid, original, applies)


def uninstall(scheduler) -> None:
    """Puts back what `install` replaced (the class's method, or the instance's own attribute)."""
    capped = vars(scheduler).get("set_timesteps")
    if isinstance(capped, CappedSetTimesteps):
        if capped.original is None:
            del vars(scheduler)["set_timesteps"]
        else:
            vars(scheduler)["set_timesteps"] = capped.original


class UncappedScheduleCheck:
    """A forward pre-hook on the patched transformer: warns, once, when a call beyond the trained grid runs on a
    schedule that none of the capped schedulers made.

    The transformer keeps DyPE's rope whichever pipeline calls it, but only the schedulers `apply_extrapolation`
    capped (and those a patched pipeline was given since) carry DyPE's shift. A pipeline made by
    `from_pipe(pipe, scheduler=other)`, or a loop of the user's own with another scheduler, would give half the
    method without a word. Its schedule shows in the timesteps: each call's is looked up among the capped
    schedulers' current timesteps (the first step, t = 1, is in every schedule; the second tells). Only the
    generated image's grid counts (Kontext's references carry another index), read from `img_ids` only when the
    timestep is foreign, so calls on a capped schedule cost one host read of the timestep.
    """

    def __init__(self, recorder: RecordingCheckInputs):
        self.recorder, self.warned = recorder, False

    def capped_schedulers(self) -> list:
        return [s for s in (self.recorder.pipeline.scheduler, *self.recorder.installed) if is_capped(s)]

    @torch.compiler.disable
    def __call__(self, module, args, kwargs):
        timestep, ids = kwargs.get("timestep"), kwargs.get("img_ids")
        if self.warned or not isinstance(timestep, torch.Tensor) or not isinstance(ids, torch.Tensor):
            return None
        t = float(timestep.reshape(-1)[0]) * 1000.0  # Flux pipelines pass sigma = t / 1000
        for scheduler in self.capped_schedulers():
            known = getattr(scheduler, "timesteps", None)
            if isinstance(known, torch.Tensor) and _among(t, known):
                return None
        rows = ids.reshape(-1, ids.shape[-1])
        generated = rows[rows[:, 0] == 0]
        if generated.numel() == 0:
            return None
        grid = (int(generated[:, 1].max()) + 1, int(generated[:, 2].max()) + 1)
        if all(n <= trained for n, trained in zip(grid, self.recorder.trained_grid, strict=True)):
            return None
        self.warned = True
        warnings.warn(
            f"this Flux transformer carries a DyPE method with its shift cap, but the schedule of this call at a "
            f"{grid[0]} x {grid[1]} token grid (beyond the trained {self.recorder.trained_grid}) comes from a "
            "scheduler without the cap (a pipeline made by from_pipe(..., scheduler=...) or a loop with a scheduler "
            "of its own): call apply_extrapolation on that pipeline, or pass shift_cap=False to use the method "
            "without DyPE's shift",
            UserWarning,
            stacklevel=2,
        )
        return None


def _among(t: float, timesteps: torch.Tensor) -> bool:
    """Whether timestep `t` (0..1000) is one of `timesteps`, to the precision a bf16 sigma keeps."""
    known = timesteps.detach().to("cpu", torch.float64)
    return bool(torch.isclose(known, torch.full_like(known, t), rtol=4e-3, atol=0.1).any())


@dataclass(frozen=True)
class FluxShiftCap:
    """The `shift_cap` option of Flux pipelines: None (on with the dype-* methods), True, False."""

    option: str = "shift_cap"
    patch: int = 2  # Flux packs 2 x 2 latent pixels into a token

    def wanted(self, method: str, value) -> bool:
        """Whether the cap goes with `method` under the option's `value` (None: with the dype-* methods)."""
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"shift_cap must be True, False or None, got {value!r}")
        return method.startswith("dype-") if value is None else value

    def install(
        self, pipeline, method: str, value, trained_grid: Sequence[int], applies: Callable | None = None
    ) -> list[Callable[[], None]]:
        """Caps the pipeline's scheduler and records each call's grid (module docstring); returns the undo.
        `applies` (`auto` with bands that differ on the cap, `method` then one that takes it): per call's
        token grid, whether its band's method takes the cap."""
        if not self.wanted(method, value):
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
        install(scheduler, trained_grid, applies)
        factor = getattr(pipeline, "vae_scale_factor", 8) * self.patch
        recorder = RecordingCheckInputs(pipeline, trained_grid, factor, vars(pipeline).get("check_inputs"), applies)
        vars(pipeline)["check_inputs"] = recorder
        check = UncappedScheduleCheck(recorder)
        hook = pipeline.transformer.register_forward_pre_hook(check, with_kwargs=True)

        def undo():
            hook.remove()
            if vars(pipeline).get("check_inputs") is recorder:
                if recorder.original is None:
                    del vars(pipeline)["check_inputs"]
                else:
                    vars(pipeline)["check_inputs"] = recorder.original
            for capped in (scheduler, *recorder.installed, pipeline.scheduler):
                uninstall(capped)

        return [undo]


@dataclass(frozen=True)
class IdsKind(RopeKind):
    """How an ids-based rope's ids reach the transformer.

    image_ids, text_ids: the forward arguments holding the image ids (references included, where the
        pipeline appends them) and the text ids (None: the text's rows are in the image argument, Krea2).
    reference_ids: an argument holding reference images' ids apart (Flux3's `image_cond_ids`).
    separate_calls: the arguments the transformer passes to the rope one at a time, in its order;
        empty: one call on cat(text ids, image ids).
    index_axis, output_index: the axis telling images apart and the generated image's value on it.
    spacing: position units between neighbouring tokens on the spatial axes (Flux3: 0.5).
    """

    image_ids: str = "img_ids"
    text_ids: str | None = "txt_ids"
    reference_ids: str | None = None
    separate_calls: tuple[str, ...] = ()
    index_axis: int = 0
    output_index: float = 0.0
    spacing: float = 1.0
    title: ClassVar[str] = "ids (FluxPosEmbed)"
    options: ClassVar[tuple[str, ...]] = ("reference",)

    def make_rope(self, original, setup: RopeSetup) -> IdsRope:
        reference_rule(setup.options)
        if self.reference_ids is not None or self.text_ids is None:
            where = "in an argument apart" if self.text_ids is not None else "beside text rows in one argument"
            refuse_untwist(setup.options, setup.family.title, f"its references' ids arrive {where}")
        return IdsRope(original, setup)


def _two_dimensional(ids):
    """The 3D form (1, seq, n_axes) (deprecated for Flux, Flux.2's own): the transformer takes [0]."""
    return ids[0] if ids is not None and ids.ndim == 3 else ids


def storage_key(tensor: torch.Tensor) -> tuple:
    """A tensor's part of a cache key: where its values live and their version (a view taken again of
    the same tensor has the same key; the cache entry keeps the tensor, so the memory is not reused).
    An inference tensor has no version: its values are its key (`axialrope.table_cache.tensor_key`)."""
    if tensor.is_inference():
        return tensor_key(tensor)
    return tensor.data_ptr(), tuple(tensor.shape), tensor.stride(), tensor._version, tensor.device


@dataclass(frozen=True)
class Layout:
    """What a forward's whole image ids give the rope.

    grid: per planned axis, the tokens the plan is for; maps: per reference image (its value on the
    index axis), per planned axis, the (scale, offset) that places it ("cover"; empty for "keep").
    """

    grid: tuple[int, ...]
    maps: tuple[tuple[float, tuple[tuple[float, float], ...]], ...] = ()


class IdsRope(ExtrapolatedRope):
    """forward(ids (seq, n_axes)) -> cos, sin (seq, sum(dims)) float32, as FluxPosEmbed."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.reference_rule = reference_rule(setup.options)
        # the whole ids for calls outside the transformer's forward
        self.text_ids = self.image_ids = self.reference_ids = None

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._layout_of: tuple = (((), ()), None)  # ((anchors, keys), layout): steps reuse it, no host read
        self._rows_of: tuple = ((None, None), None)  # ((anchor, key), reference rows), as the layout

    def call_inputs(self, args, kwargs, parameters) -> dict:
        kind = self.setup.family.kind
        return {
            role: _two_dimensional(argument(name, args, kwargs, parameters)) if name else None
            for role, name in (("text", kind.text_ids), ("image", kind.image_ids), ("reference", kind.reference_ids))
        }

    def whole_ids(self) -> dict[str, torch.Tensor | None]:
        """{"text", "image", "reference"} ids of the current forward; outside a forward, the
        `text_ids`, `image_ids` and `reference_ids` attributes (None unless a caller sets them)."""
        state = self.call_state()
        if hasattr(state, "inputs"):
            return state.inputs
        return {"text": self.text_ids, "image": self.image_ids, "reference": self.reference_ids}

    def reference_rows(self) -> torch.Tensor | None:
        """(rows,) bool on the CPU over the forward's image ids: True at a reference image's rows (another
        value than the output's on the index axis); None without image ids. One host read per new ids."""
        image = self.whole_ids()["image"]
        if image is None:
            return None
        key = storage_key(image)
        (_, known), rows = self._rows_of
        if known != key:
            kind = self.setup.family.kind
            rows = image.detach()[:, kind.index_axis].to("cpu") != kind.output_index
            self._rows_of = ((image, key), rows)
        return rows

    def token_spacing(self):
        spacing = self.setup.family.kind.spacing
        return None if spacing == 1 else (spacing,) * len(self.trained_grid)

    # -- where the images are -------------------------------------------------------------------------

    def layout(self, ids: torch.Tensor) -> Layout:
        """The layout of the forward's whole image (and reference) ids, or of `ids` when the module is
        called on its own; one host read per new set of ids."""
        whole = self.whole_ids()
        images = tuple(t for t in (whole["image"], whole["reference"]) if t is not None) or (ids,)
        keys = tuple(storage_key(t) for t in images)
        (_, known), layout = self._layout_of
        if known != keys:
            layout = self._measure(torch.cat([t.detach() for t in images]).to("cpu", torch.float64))
            self._layout_of = ((images, keys), layout)
        return layout

    def _measure(self, rows: torch.Tensor) -> Layout:
        """The layout of image rows (seq, n_axes) float64: the generated image's rows and each reference's
        by their value on the index axis."""
        kind = self.setup.family.kind
        columns = self.setup.family.planned_axes
        index = rows[:, kind.index_axis]
        output = rows[index == kind.output_index]
        values = [float(v) for v in torch.unique(index).tolist() if v != kind.output_index]
        if self.reference_rule == "keep" or not values or not len(output):
            return Layout(tuple(e.tokens for e in self._extents(rows, columns)))
        extents = self._extents(output, columns)
        maps = tuple(
            (
                value,
                tuple(
                    cover_map(ref, out)
                    for ref, out in zip(self._extents(rows[index == value], columns), extents, strict=True)
                ),
            )
            for value in values
        )
        return Layout(tuple(e.tokens for e in extents), maps)

    def _extents(self, rows: torch.Tensor, columns) -> tuple[Extent, ...]:
        spacing = self.setup.family.kind.spacing
        return tuple(Extent(float(rows[:, c].min()), float(rows[:, c].max()), spacing) for c in columns)

    def placed(self, ids: torch.Tensor, layout: Layout) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(rows, their positions): the rows of `ids` (a CPU bool mask) that belong to a reference image the
        layout moves and their placed positions (float64, CPU); None where no row of `ids` moves (no
        reference among them, or references as large as the output)."""
        moving = [(value, maps) for value, maps in layout.maps if any(m != (1.0, 0.0) for m in maps)]
        if not moving:
            return None
        rows = ids.detach().to("cpu", torch.float64)
        index = rows[:, self.setup.family.kind.index_axis]
        placed, moved = rows.clone(), torch.zeros(len(rows), dtype=torch.bool)
        for value, maps in moving:
            mask = index == value
            moved |= mask
            for column, (scale, offset) in zip(self.setup.family.planned_axes, maps, strict=True):
                placed[mask, column] = rows[mask, column] * scale + offset
        return (moved, placed[moved]) if bool(moved.any()) else None

    # -- the table ------------------------------------------------------------------------------------

    def table_key(self, ids: torch.Tensor) -> tuple[tuple, tuple] | None:
        """(cache key, anchors) when `ids` is one of the forward's whole arguments or the transformer's
        cat(text ids, image ids); None for anything else (a context-parallel shard)."""
        whole = [t for t in self.whole_ids().values() if t is not None]
        key = storage_key(ids)
        if any(storage_key(t) == key for t in whole):
            return (key,), (ids,)
        text, image = self.whole_ids()["text"], self.whole_ids()["image"]
        if text is not None and image is not None and ids.shape[0] == text.shape[0] + image.shape[0]:
            return (storage_key(text), storage_key(image)), (text, image)
        return None

    def forward(self, ids: torch.Tensor):
        layout = self.layout(ids)
        plan = self.plan(layout.grid)
        if plan is None:
            return self.original(ids)
        scalings = self.axis_scalings(plan)

        def table(where):
            return ids_table(self.setup.dims, self.setup.thetas, scalings, plan.logit_scale, where)

        def build():
            cos, sin = table(ids)  # integer ids: each axis's 1D table gathered
            placed = self.placed(ids, layout)
            if placed is not None:  # the moved references' rows at their placed (fractional) positions
                rows, positions = placed
                rows = rows.to(ids.device)
                cos[rows], sin[rows] = (t.to(ids.device) for t in table(positions))
            return cos, sin

        found = self.table_key(ids)
        if found is None:
            return build()  # a shard of the ids (context parallelism): its own rows, same global plan
        key, anchors = found
        return self.cached((*key, ids.device, plan_key(plan), layout.maps), build, anchors=anchors)

    def fake_tables(self, tensors, ints, device):
        """cos, sin (seq, sum(dims)) float32 for ids (seq, n_axes)."""
        ids = tensors[0]
        return [ids.new_empty((ids.shape[-2], sum(self.setup.dims)), dtype=torch.float32) for _ in range(2)]


# -- families ------------------------------------------------------------------------------------------------

FLUX = Family(
    name="flux",
    title="FLUX.1",
    classes=("FluxTransformer2DModel",),
    kind=IdsKind(image_ids="img_ids", text_ids="txt_ids"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope", theta=10000.0, theta_source="FluxTransformer2DModel builds FluxPosEmbed(theta=10000)"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "FLUX.1 [dev]/[schnell]: 1024 x 1024 px (FluxPipeline's default, default_sample_size 128 x VAE 8); "
            "VAE 8x, 2x2 patches = 16 px per token; DyPE's Flux code uses the same base (1024 // 16 = 64)",
        ),
    ),
    time=Timestep(1.0, "FluxPipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("FluxPosEmbed",),
    pipelines=(
        "FluxPipeline",
        "FluxImg2ImgPipeline",
        "FluxInpaintPipeline",
        "FluxControlNetPipeline",
        "FluxKontextPipeline",
        "FluxKontextInpaintPipeline",
        "FluxFillPipeline",
    ),
    extras=(FluxShiftCap(),),
)

# its ControlNet carries its own copy of the rope; patched with the transformer when a pipeline is passed
FLUX_CONTROLNET = replace(
    FLUX,
    name="flux-controlnet",
    title="FLUX.1 ControlNet",
    classes=("FluxControlNetModel",),
    pipelines=("FluxControlNetPipeline",),
    extras=(),
)


# -- copies of FluxPosEmbed (fluxkin) ------------------------------------------------------------------------

SIXTEEN_PX = "VAE 8x, 2x2 patches = 16 px per token"
SIGMA = "its pipeline passes sigma (the scheduler's timestep / 1000)"


def _default_1024(pipeline: str, why: str, tokens: str = SIXTEEN_PX) -> str:
    return (
        f"{pipeline}'s default 1024 x 1024 px ({why}; no model card read here, no network); {tokens}; "
        "a model trained larger passes its own trained_grid"
    )


def _constant_theta(model: str, rope: str) -> RopeAxes:
    return RopeAxes(dims="axes_dims_rope", theta=10000.0, theta_source=f"{model} builds {rope}(theta=10000)")


def _config_theta(model: str) -> RopeAxes:
    return RopeAxes(dims="axes_dims_rope", theta="rope_theta", theta_source=f"{model}'s config rope_theta")


CHROMA = replace(
    FLUX,
    name="chroma",
    title="Chroma",
    classes=("ChromaTransformer2DModel",),
    rope_axes=_constant_theta("ChromaTransformer2DModel", "FluxPosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("ChromaPipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    pipelines=("ChromaPipeline", "ChromaImg2ImgPipeline", "ChromaInpaintPipeline"),
)

LONGCAT_IMAGE = replace(  # text on the diagonal of (y, x) at 0 .. L - 1 on modality 0; the image on modality 1 after it
    FLUX,
    name="longcat-image",
    title="LongCat-Image",
    classes=("LongCatImageTransformer2DModel",),
    kind=IdsKind(output_index=1.0),
    rope_classes=("LongCatImagePosEmbed",),
    rope_axes=_constant_theta("LongCatImageTransformer2DModel", "LongCatImagePosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("LongCatImagePipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    pipelines=("LongCatImagePipeline", "LongCatImageEditPipeline"),
)

OVIS_IMAGE = replace(
    FLUX,
    name="ovis-image",
    title="Ovis-Image",
    classes=("OvisImageTransformer2DModel",),
    rope_classes=("OvisImagePosEmbed",),
    rope_axes=_constant_theta("OvisImageTransformer2DModel", "OvisImagePosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("OvisImagePipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    pipelines=("OvisImagePipeline",),
)

KREA2 = replace(  # one `position_ids` argument: the text's rows (all 0) and the image's
    FLUX,
    name="krea2",
    title="Krea 2",
    classes=("Krea2Transformer2DModel",),
    kind=IdsKind(image_ids="position_ids", text_ids=None),
    rope_attr="rotary_emb",
    rope_classes=("Krea2RotaryPosEmbed",),
    rope_axes=_config_theta("Krea2Transformer2DModel"),
    trained=(
        TrainedGrid(
            (64, 64),
            _default_1024("Krea2Pipeline", "height=width=1024", "Qwen-Image VAE 8x, 2x2 patches = 16 px per token"),
        ),
    ),
    time=Timestep(1.0, "Krea2Pipeline passes the scheduler's timestep / num_train_timesteps (sigma)"),
    extras=(),
    pipelines=("Krea2Pipeline",),
)

BRIA = replace(
    FLUX,
    name="bria",
    title="Bria 3.2",
    classes=("BriaTransformer2DModel",),
    rope_classes=("BriaEmbedND",),
    rope_axes=_config_theta("BriaTransformer2DModel"),
    trained=(TrainedGrid((64, 64), _default_1024("BriaPipeline", "default_sample_size 64 x vae_scale_factor 16")),),
    time=Timestep(1000.0, "BriaPipeline passes the scheduler's timesteps (1000 at pure noise)"),
    extras=(),
    pipelines=("BriaPipeline",),
)

BRIA_FIBO = replace(  # BriaFiboEditPipeline: each reference at its own size on index 1, 2, ...
    FLUX,
    name="bria-fibo",
    title="BriaFibo",
    classes=("BriaFiboTransformer2DModel",),
    rope_classes=("BriaFiboEmbedND",),
    rope_axes=_config_theta("BriaFiboTransformer2DModel"),
    trained=(
        TrainedGrid(
            (64, 64),
            _default_1024(
                "BriaFiboPipeline", "default_sample_size 64 x VAE 16", "Wan 2.2 VAE 16x, no patching = 16 px per token"
            ),
        ),
    ),
    time=Timestep(1000.0, "BriaFiboPipeline passes the scheduler's timesteps (1000 at pure noise)"),
    extras=(),
    pipelines=("BriaFiboPipeline", "BriaFiboEditPipeline"),
)

# -- Flux.2 and Flux3: four axes (t, h, w, l), the text on l, the rope called once per ids argument ------------

FLUX2 = Family(
    name="flux2",
    title="FLUX.2",
    classes=("Flux2Transformer2DModel",),
    kind=IdsKind(separate_calls=("img_ids", "txt_ids")),  # references on t = 10, 20, ... (Flux2Pipeline)
    axes=("reference", "spatial", "spatial", "reference"),
    rope_axes=_config_theta("Flux2Transformer2DModel"),
    trained=(
        TrainedGrid(
            (128, 128),
            "Black Forest Labs' FLUX.2 announcement, as quoted by ComfyUI's FLUX.2 [dev] page (found by search; "
            "the model "
            "card itself was not read): output up to 4 MP, i.e. 2048 x 2048 px; VAE 8x, 2x2 patches = 16 px per token. "
            "Flux2Pipeline samples 1024 x 1024 px by default. FLUX.2 [klein] shares the class and is assumed the same",
            pipeline_default=(64, 64),
        ),
    ),
    time=Timestep(1.0, "Flux2Pipeline passes sigma (the scheduler's timestep / 1000)"),
    rope_attr="pos_embed",
    rope_classes=("Flux2PosEmbed",),
    pipelines=("Flux2Pipeline", "Flux2KleinPipeline", "Flux2KleinInpaintPipeline", "Flux2KleinKVPipeline"),
)

FLUX3 = replace(
    FLUX2,
    name="flux3",
    title="FLUX.3",
    classes=("Flux3Transformer2DModel",),
    # references apart in `image_cond_ids`, at l = -1, -2, ...; h and w scaled by image_rope_scale 0.5
    kind=IdsKind(
        reference_ids="image_cond_ids",
        separate_calls=("txt_ids", "img_ids", "image_cond_ids"),
        index_axis=3,
        spacing=0.5,
    ),
    rope_axes=_config_theta("Flux3Transformer2DModel"),
    rope_classes=("Flux3PosEmbed",),
    trained=(TrainedGrid((64, 64), _default_1024("Flux3PrepareLatentsStep", "the modular pipeline's block")),),
    time=Timestep(1.0, "Flux3's modular denoise step passes the scheduler's timestep / 1000 (sigma)"),
    pipelines=(),
)

FAMILIES = (FLUX, FLUX_CONTROLNET, CHROMA, LONGCAT_IMAGE, OVIS_IMAGE, KREA2, BRIA, BRIA_FIBO, FLUX2, FLUX3)
