"""QwenEmbedRope (Qwen-Image, its ControlNet, NucleusMoE-Image) and Qwen-Image 2.1's joint-sequence rope.

`QwenEmbedRope(video_fhw, device, max_txt_seq_len)` returns complex64 tables (vid (seq, pairs),
txt (txt_len, pairs)) over axes (frame, y, x). Image i's frames sit at positions i .. i + f - 1;
with scale_rope (the model's setting) y and x are centred, -(h - h // 2) .. h // 2 - 1; text
token j sits at max(h // 2, w // 2) + j on all three axes, over all images. The grid is the
generated image's (h, w), the first of `img_shapes`; Qwen-Image-Edit (Plus) appends its reference
images after it, at frames 1, 2, ... (the `reference` option, `references.py`: "cover" maps each
reference onto the generated image's extent; "keep" leaves the pipeline's positions and takes the
largest (h, w) over all images). The frame axis is a reference axis and stays as trained.

Text tokens, option `dype_variant`:
- "qwen" (default): as DyPE's Qwen-Image code for the dype-* methods: text keeps the trained
  table (no gain) and t = 1 - timestep / 1000 (their conversion of the sigma the pipeline passes).
- "flux": as DyPE's Flux code: every token on an axis, text included, gets the method's
  frequencies and gain (so text-image logits stay relative), and t = timestep.
The other methods always take the "flux" rule. Time: QwenImagePipeline passes timestep = sigma.

Qwen-Image-Layered (`use_layer3d_rope`, QwenEmbedLayer3DRope) puts its generated layers at frames
0, 1, ... and its condition image, the last of `img_shapes`, at frame -1; its text starts after
the layers' count too. NucleusMoEEmbedRope is a copy of QwenEmbedRope. Qwen-Image 2.1's rope
(QwenImage21Rope, `Qwen21Kind`) walks one joint sequence of text and images.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from axialrope.coords import bundle_positions, bundle_slides

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..spa_attention import register_variants
from .base import ExtrapolatedRope, RopeKind, RopeSetup, argument, axial_table, grid_table, plan_key
from .references import Extent, cover_map, key_bands, reference_rule, refuse_untwist

DYPE_VARIANTS = ("qwen", "flux")


@dataclass(frozen=True)
class QwenKind(RopeKind):
    """QwenEmbedRope and its copies (called with img_shapes, device and max_txt_seq_len)."""

    title: ClassVar[str] = "QwenEmbedRope"
    options: ClassVar[tuple[str, ...]] = ("dype_variant", "reference")

    def make_rope(self, original, setup: RopeSetup) -> QwenRope:
        reference_rule(setup.options)
        if setup.config.get("use_layer3d_rope", False):
            refuse_untwist(setup.options, setup.family.title, "Qwen-Image-Layered's images are layers, not references")
        variant = setup.options.get("dype_variant", "qwen")
        if variant not in DYPE_VARIANTS:
            raise ValueError(f"dype_variant must be one of {DYPE_VARIANTS}, got {variant!r}")
        return QwenRope(original, setup)

    def spa_unreached(self, family: Family) -> str:
        return ""  # the (image, text) tables reach every joint attention call as `image_rotary_emb`


def centred_positions(n: int, centred: bool) -> torch.Tensor:
    """Qwen's positions of n tokens on y or x: centred (scale_rope) or 0 .. n - 1 (float64)."""
    positions = torch.arange(n, dtype=torch.float64)
    return positions - (n - n // 2) if centred else positions


class QwenRope(ExtrapolatedRope):
    """forward(video_fhw, device, max_txt_seq_len) -> (vid, txt) complex64, as `QwenEmbedRope`."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.scale_rope = bool(original.scale_rope)
        self.layered = bool(setup.config.get("use_layer3d_rope", False))
        self.reference_rule = reference_rule(setup.options)
        self.qwen_variant = setup.options.get("dype_variant", "qwen") == "qwen"

    def authors_qwen(self, extrapolation) -> bool:
        """Whether `extrapolation` (the call's method) is DyPE's Qwen code: a dype-* method, variant "qwen"."""
        return self.qwen_variant and extrapolation.method.startswith("dype-")

    def t_for(self, extrapolation) -> float:
        if self.authors_qwen(extrapolation):  # DyPE's Qwen code: t = 1 - timestep / 1000, the timestep being sigma
            return min(max(1.0 - self.call_state().raw() / 1000.0, 0.0), 1.0)
        return super().t_for(extrapolation)

    @staticmethod
    def shapes_of(video_fhw) -> list[tuple[int, int, int]]:
        """The first sample's list of (frames, h, w), as QwenEmbedRope reads img_shapes."""
        if isinstance(video_fhw, list):
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]
        return [tuple(int(n) for n in fhw) for fhw in video_fhw]

    def text_start(self, shapes: list[tuple[int, int, int]]) -> int:
        """The first text position: max(h // 2, w // 2) over the images (max(h, w) without scale_rope), and
        at least the layers' count for Qwen-Image-Layered."""
        start = max(max((h // 2, w // 2) if self.scale_rope else (h, w)) for _, h, w in shapes)
        return max(start, len(shapes) - 1) if self.layered else start

    def call_inputs(self, args, kwargs, parameters) -> dict:
        """The forward's `img_shapes` where "untwist" reads the reference rows from them."""
        if key_bands(self.setup.options) is None:
            return {}
        return {"img_shapes": argument("img_shapes", args, kwargs, parameters)}

    def reference_rows(self) -> torch.Tensor | None:
        """(rows,) bool on the CPU over the image stream: True past the generated image's rows (the first of
        the first sample's `img_shapes`, as QwenEmbedRope reads them); None outside a forward."""
        shapes = getattr(self.call_state(), "inputs", {}).get("img_shapes")
        if shapes is None:
            return None
        sizes = [f * h * w for f, h, w in self.shapes_of(shapes)]
        return torch.arange(sum(sizes)) >= sizes[0]

    def grid(self, shapes: list[tuple[int, int, int]]) -> tuple[int, int]:
        """The (h, w) the plan is for: the generated image's ("cover", "untwist", and spa's under any rule: it
        bundles the generated image alone), the largest over all images ("keep")."""
        if self.reference_rule != "keep" or self.method_for(shapes[0][1:])[0].method == "spa":
            return shapes[0][1:]
        return max(h for _, h, _ in shapes), max(w for _, _, w in shapes)

    def image_positions(self, shapes: list[tuple[int, int, int]], cover: bool = True) -> list[list[torch.Tensor]]:
        """Per image, its (frame, y, x) positions (float64): frames index .. index + f - 1 (Qwen-Image-Layered's
        condition image at -1), y and x as QwenEmbedRope places them, a reference's mapped onto the
        generated image's extent under "cover" (unless `cover` is False: the pipeline's positions)."""
        out_y, out_x = (centred_positions(n, self.scale_rope) for n in shapes[0][1:])
        positions = []
        for index, (frames, height, width) in enumerate(shapes):
            ys, xs = centred_positions(height, self.scale_rope), centred_positions(width, self.scale_rope)
            if index and cover and self.reference_rule != "keep":
                ys, xs = (_covering(own, out) for own, out in ((ys, out_y), (xs, out_x)))
            first = -1 if self.layered and index == len(shapes) - 1 else index  # Layered's condition image: -1
            positions.append([torch.arange(first, first + frames, dtype=torch.float64), ys, xs])
        return positions

    def forward(self, video_fhw, device: torch.device | None = None, max_txt_seq_len=None):
        shapes = self.shapes_of(video_fhw)
        grid = self.grid(shapes)
        plan = self.plan(grid)
        if plan is None:
            return self.original(video_fhw, device=device, max_txt_seq_len=max_txt_seq_len)
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")
        text_tokens = int(max_txt_seq_len)
        device = torch.device(device) if device is not None else torch.device("cpu")
        dims, thetas, scalings = self.setup.dims, self.setup.thetas, self.axis_scalings(plan)

        def image_table(positions):
            return torch.cat(
                [torch.complex(*grid_table(dims, thetas, scalings, plan.logit_scale, p, device)) for p in positions]
            )

        def text_table():
            start = self.text_start(shapes)
            if self.authors_qwen(self.method_for(grid)[0]):  # the trained table, exactly as QwenEmbedRope gives it
                return self.original.pos_freqs[start : start + text_tokens].to(device)
            where = (start + torch.arange(text_tokens, dtype=torch.float64))[:, None].expand(-1, 3)
            return torch.complex(*axial_table(dims, thetas, scalings, plan.logit_scale, where, device))

        if plan.bundle_size > 1:  # spa: every variant's tables, the first handed on (`spa_attention.py`)
            build = lambda: self.spa_tables(shapes, plan, image_table, text_table())  # noqa: E731
            key = ("spa", tuple(shapes), text_tokens, device, plan_key(plan), plan.bundle_size, plan.bundled_axes)
            return register_variants(self, self.cached(key, build))

        def build():
            return image_table(self.image_positions(shapes)), text_table()

        return self.cached((tuple(shapes), text_tokens, device, plan_key(plan)), build)

    def spa_tables(self, shapes, plan, image_table, text: torch.Tensor) -> tuple:
        """spa's (image, text) tables, one per variant of `bundle_slides`: the generated image's y and x (the first
        of `shapes`; Qwen-Image-Layered's generated layers, all but its last, the condition image) bundled from
        their first token, references at the pipeline's positions and text as they are.
        image_table: per-image positions -> complex (image tokens, pairs); text: complex (text tokens, pairs)."""
        planned = self.setup.family.planned_axes
        generated = range(max(1, len(shapes) - 1)) if self.layered else range(1)
        tables = []
        for first in bundle_slides(len(plan.bundled_axes), plan.bundle_size):
            positions = self.image_positions(shapes, cover=False)
            for image in generated:
                for axis, size in zip(plan.bundled_axes, first, strict=True):
                    own = positions[image][planned[axis]]
                    positions[image][planned[axis]] = bundle_positions(own, float(own[0]), 1.0, size, plan.bundle_size)
            tables.append((image_table(positions), text))
        return tuple(tables)

    @staticmethod
    def call_arguments(args, kwargs) -> tuple:
        """(video_fhw, device, max_txt_seq_len) of a call, given by position or name."""
        named = dict(zip(("video_fhw", "device", "max_txt_seq_len"), args, strict=False))
        named.update(kwargs)
        return named.get("video_fhw"), named.get("device"), named.get("max_txt_seq_len")

    def within_trained(self, args, kwargs) -> bool:
        return self.within_grid(self.grid(self.shapes_of(self.call_arguments(args, kwargs)[0])))

    def graph_arguments(self, args, kwargs):
        """No tensors: the first sample's shapes, flattened after their count, then the text's length."""
        video_fhw, device, text_tokens = self.call_arguments(args, kwargs)
        if text_tokens is None or isinstance(text_tokens, torch.Tensor):
            return None  # a length held in a tensor would be read on the host: the eager call does that
        shapes = self.shapes_of(video_fhw)
        ints = [len(shapes), *(n for shape in shapes for n in shape), int(text_tokens)]
        return [], ints, torch.device(device) if device is not None else torch.device("cpu")

    def from_graph_arguments(self, tensors, ints, device):
        count = ints[0]
        shapes = [tuple(ints[1 + 3 * i : 4 + 3 * i]) for i in range(count)]
        return ([shapes],), {"device": device, "max_txt_seq_len": ints[-1]}

    def fake_tables(self, tensors, ints, device):
        """complex64 (image tokens, pairs) and (text tokens, pairs)."""
        count, pairs = ints[0], sum(self.setup.dims) // 2
        tokens = sum(ints[1 + 3 * i] * ints[2 + 3 * i] * ints[3 + 3 * i] for i in range(count))
        return [torch.empty((n, pairs), dtype=torch.complex64, device=device) for n in (tokens, ints[-1])]


def _covering(own: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    """A reference's positions on one axis mapped onto the output's extent (unchanged where they match)."""
    scale, offset = cover_map(Extent(float(own[0]), float(own[-1])), Extent(float(output[0]), float(output[-1])))
    return own if (scale, offset) == (1.0, 0.0) else own * scale + offset


@dataclass(frozen=True)
class Qwen21Kind(RopeKind):
    """Qwen-Image 2.1's rope over the joint text and image sequence (QwenImage21Rope).

    `rope(img_shapes, image_pad_mask, device)` with the first sample's (frames, h, w) per image, the
    condition images first and the generated image last, and image_pad_mask (seq,) True at image
    tokens, returns complex64 (seq, pairs) over axes (frame, y, x). A running position p walks the
    sequence: each text token sits at (p, p, p) and advances it; an image block sits on frame p, its
    y and x centred on zero, -(n - n // 2) .. n // 2 - 1, and advances p by max(h, w). The frame axis
    stays as trained; y and x take the method, text tokens too (on the diagonal, so text-image logits
    stay relative). The plan follows the generated image ("cover": the condition images mapped onto its
    extent, `references.py`) or the largest image ("keep": the pipeline's positions).
    """

    title: ClassVar[str] = "joint sequence (Qwen-Image 2.1)"
    options: ClassVar[tuple[str, ...]] = ("reference",)

    def make_rope(self, original, setup: RopeSetup) -> Qwen21Rope:
        reference_rule(setup.options)
        refuse_untwist(setup.options, setup.family.title, "its condition images share one joint sequence with text")
        return Qwen21Rope(original, setup)


def joint_positions(shapes, is_image: list[bool], cover: bool) -> torch.Tensor:
    """(seq, 3) float64 (frame, y, x) of the joint sequence, as QwenImage21Rope walks it; under `cover`
    each condition image's y and x mapped onto the generated image's (the last) extent."""
    out_y, out_x = (centred_positions(n, True) for n in shapes[-1][1:])
    rows, cursor, position = [], 0, 0
    for index, (_, height, width) in enumerate(shapes):
        start = is_image.index(True, cursor)
        rows += [(float(p),) * 3 for p in range(position, position + start - cursor)]
        position += start - cursor
        ys, xs = centred_positions(height, True), centred_positions(width, True)
        if cover and index < len(shapes) - 1:
            ys, xs = _covering(ys, out_y), _covering(xs, out_x)
        grid = torch.stack(torch.meshgrid(ys, xs, indexing="ij"), -1).reshape(-1, 2)
        rows += [(float(position), float(y), float(x)) for y, x in grid.tolist()]
        position += max(height, width)
        cursor = start + height * width
    rows += [(float(p),) * 3 for p in range(position, position + len(is_image) - cursor)]
    return torch.tensor(rows, dtype=torch.float64).reshape(-1, 3)


class Qwen21Rope(ExtrapolatedRope):
    """forward(img_shapes, image_pad_mask, device) -> complex64 (seq, pairs), as QwenImage21Rope."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.reference_rule = reference_rule(setup.options)

    def grid(self, shapes) -> tuple[int, int]:
        if self.reference_rule == "cover":
            return tuple(shapes[-1][1:])
        return max(h for _, h, _ in shapes), max(w for _, _, w in shapes)

    def forward(self, img_shapes, image_pad_mask: torch.Tensor, device=None):
        shapes = [tuple(int(n) for n in fhw) for fhw in img_shapes]
        plan = self.plan(self.grid(shapes))
        if plan is None:
            return self.original(img_shapes, image_pad_mask, device=device)
        mask = image_pad_mask.detach().to("cpu")
        device = torch.device(device) if device is not None else image_pad_mask.device

        def build():
            coords = joint_positions(shapes, mask.tolist(), self.reference_rule == "cover")
            cos, sin = axial_table(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, coords, device=device
            )
            return torch.complex(cos, sin)

        values = hashlib.sha1(mask.numpy().tobytes()).hexdigest()
        return self.cached((tuple(shapes), values, device, plan_key(plan), self.reference_rule), build)


# -- families ------------------------------------------------------------------------------------------------

QWEN_IMAGE = Family(
    name="qwen-image",
    title="Qwen-Image",
    classes=("QwenImageTransformer2DModel",),
    kind=QwenKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="QwenImageTransformer2DModel builds QwenEmbedRope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "Qwen-Image-Layered: QwenImageLayeredPipeline takes resolution 640 (its default) or 1024 px, an area "
            "bucket "
            "for the input's aspect ratio; the larger, 1024 x 1024 px, is taken as trained (no model card read "
            "here, no "
            "network); VAE 8x, 2x2 patches = 16 px per token",
            pipeline_default=(40, 40),
            when=(("use_layer3d_rope", True),),
            label="Layered, use_layer3d_rope",
        ),
        TrainedGrid(
            (83, 83),
            "Qwen-Image model card: 1328 x 1328 px for 1:1 (its aspect-ratio table); VAE 8x, 2x2 patches = 16 px per "
            "token; DyPE's Qwen-Image code uses the same base (1328 // 16 = 83)",
            pipeline_default=(64, 64),
        ),
    ),  # QwenImagePipeline: default_sample_size 128 x VAE 8 = 1024 px
    time=Timestep(1.0, "QwenImagePipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("QwenEmbedRope", "QwenEmbedLayer3DRope"),
    pipelines=(
        "QwenImagePipeline",
        "QwenImageImg2ImgPipeline",
        "QwenImageInpaintPipeline",
        "QwenImageControlNetPipeline",
        "QwenImageEditPipeline",
        "QwenImageEditPlusPipeline",
        "QwenImageEditInpaintPipeline",
        "QwenImageLayeredPipeline",
    ),
)

QWEN_IMAGE_CONTROLNET = replace(
    QWEN_IMAGE,
    name="qwen-image-controlnet",
    title="Qwen-Image ControlNet",
    classes=("QwenImageControlNetModel",),
    pipelines=("QwenImageControlNetPipeline",),
    trained=QWEN_IMAGE.trained[-1:],
    rope_classes=("QwenEmbedRope",),
)

NUCLEUSMOE_IMAGE = replace(
    QWEN_IMAGE,
    name="nucleusmoe-image",
    title="NucleusMoE-Image",
    classes=("NucleusMoEImageTransformer2DModel",),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="NucleusMoEImageTransformer2DModel builds NucleusMoEEmbedRope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "NucleusMoEImagePipeline's default 1024 x 1024 px (default_sample_size 128 x VAE 8; no model card read "
            "here, no network); VAE 8x, 2x2 patches = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "NucleusMoEImagePipeline passes the scheduler's timestep / num_train_timesteps (sigma)"),
    rope_classes=("NucleusMoEEmbedRope",),
    pipelines=("NucleusMoEImagePipeline",),
)

QWEN_IMAGE_21 = Family(
    name="qwen-image-2.1",
    title="Qwen-Image 2.1",
    classes=("QwenImage21Transformer2DModel",),
    kind=Qwen21Kind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="QwenImage21Transformer2DModel builds QwenImage21Rope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "QwenImage21Pipeline's default output_resolution 1024 x 1024 px (no model card read here, no network); "
            "VAE 16x, patch 1 = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "QwenImage21Pipeline passes the scheduler's timestep / 1000 (sigma)"),
    rope_attr="pos_embed",
    rope_classes=("QwenImage21Rope",),
    pipelines=("QwenImage21Pipeline",),
)

FAMILIES = (QWEN_IMAGE, QWEN_IMAGE_CONTROLNET, NUCLEUSMOE_IMAGE, QWEN_IMAGE_21)
