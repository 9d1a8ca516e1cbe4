"""Z-Image's RopeEmbedder and its copies (Z-Image ControlNet, BriaFibo 2.0): integer ids, complex tables.

`rope(ids)` with ids (seq, 3) integers (a plane index, y, x) returns complex64 (seq, pairs): each
axis's table gathered at its column. The caption (and BriaFibo 2.0's gist tokens) sit on planes
1, 2, ... at y = x = 0, the generated image on the plane after them over its (y, x) grid. The
transformer builds the ids inside its forward and calls the rope several times (the image, the
caption, BriaFibo 2.0's gist tokens, Z-Image Omni's SigLIP tokens), so the plan of every call of a
forward follows the generated image's token grid, read from the forward's latent argument
(`RopeEmbedderKind.latent`, its last two dims over the patch), and the plane axis stays as
trained. Reference images (Z-Image Omni, BriaFibo 2.0's context latents) keep their positions.
Z-Image's RopeEmbedder is a plain object, not a module: the replacement is set as a plain
attribute; Z-Image's ControlNet shares the transformer's object (`from_transformer`) and is
patched with its own replacement of it when a pipeline is passed.

Time: ZImagePipeline passes `t` = 1 - sigma (0 at pure noise); BriaFibo2Pipeline passes sigma.
No model card was read (no network): trained grids are the pipelines' defaults, which a model
trained larger overrides with its own trained_grid.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from ..family import Family, LatentRead, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, argument, axial_table, plan_key


@dataclass(frozen=True)
class RopeEmbedderKind(RopeKind):
    """latent: the forward argument holding the generated image's latent: a tensor (..., H, W), or per
    sample a list (Z-Image: (C, F, H, W); Omni: a list of images, the generated one last).
    patch: the forward argument with the patch size, or the config key where `patch_in_config`."""

    latent: str = "x"
    patch: str = "patch_size"
    patch_in_config: bool = False
    title: ClassVar[str] = "RopeEmbedder (Z-Image)"

    def make_rope(self, original, setup: RopeSetup) -> RopeEmbedderRope:
        return RopeEmbedderRope(original, setup)


def generated_latent(latent) -> torch.Tensor | None:
    """The generated image's latent: the first sample's, and its last image where a sample holds several."""
    if isinstance(latent, (list, tuple)):  # one entry per sample
        latent = latent[0] if latent else None
    if isinstance(latent, (list, tuple)):  # Z-Image Omni: the sample's images, the generated one last
        latent = latent[-1] if latent else None
    return latent


class RopeEmbedderRope(ExtrapolatedRope):
    """forward(ids (seq, 3) integers) -> complex64 (seq, pairs), as RopeEmbedder."""

    def call_inputs(self, args, kwargs, parameters) -> dict:
        kind = self.setup.family.kind
        latent = generated_latent(argument(kind.latent, args, kwargs, parameters))
        if kind.patch_in_config:
            patch = self.setup.config[kind.patch]
        else:
            given = argument(kind.patch, args, kwargs, parameters)
            patch = given if given is not None else 2  # the forward's default
        if latent is None:
            return {}
        return {"grid": tuple(int(n) // int(patch) for n in latent.shape[-2:])}

    def grid(self, rows: torch.Tensor) -> tuple[int, ...]:
        """The forward's generated image grid; outside a forward, the extent of the ids on y and x."""
        state = self.call_state()
        if "grid" in getattr(state, "inputs", {}):
            return state.inputs["grid"]
        return tuple(
            int(rows[:, a].max() - rows[:, a].min()) + 1 if len(rows) else 0 for a in self.setup.family.planned_axes
        )

    def forward(self, ids: torch.Tensor):
        rows = ids.detach().to("cpu", torch.float64)
        plan = self.plan(self.grid(rows))
        if plan is None:
            return self.original(ids)

        def build():
            cos, sin = axial_table(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, rows, device=ids.device
            )
            return torch.complex(cos, sin)

        values = hashlib.sha1(rows.numpy().tobytes()).hexdigest()
        return self.cached((tuple(ids.shape), values, ids.device, plan_key(plan)), build)

    def fake_tables(self, tensors, ints, device):
        """complex64 (seq, sum(dims) // 2) for ids (seq, 3)."""
        ids = tensors[0]
        return [ids.new_empty((ids.shape[0], sum(self.setup.dims) // 2), dtype=torch.complex64)]

    def from_graph_outputs(self, tensors):
        return tensors[0]


# -- families ------------------------------------------------------------------------------------------------

Z_IMAGE = Family(
    name="z-image",
    title="Z-Image",
    classes=("ZImageTransformer2DModel",),
    kind=RopeEmbedderKind(latent="x", patch="patch_size"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims", theta="rope_theta", theta_source="ZImageTransformer2DModel's config rope_theta"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "ZImagePipeline's default 1024 x 1024 px (no model card read here, no network); VAE 8x, 2x2 patches "
            "= 16 px "
            "per token",
        ),
    ),
    time=Timestep(0.0, "ZImagePipeline passes `t` = (1000 - timestep) / 1000 = 1 - sigma", at_clean=1.0, argument="t"),
    rope_attr="rope_embedder",
    rope_classes=("RopeEmbedder",),
    pipelines=(
        "ZImagePipeline",
        "ZImageImg2ImgPipeline",
        "ZImageInpaintPipeline",
        "ZImageOmniPipeline",
        "ZImageControlNetPipeline",
        "ZImageControlNetInpaintPipeline",
    ),
    latent=LatentRead("x", "list"),
)

# shares the transformer's RopeEmbedder (ZImageControlNetModel.from_transformer), whose numbers it reads
Z_IMAGE_CONTROLNET = replace(
    Z_IMAGE,
    name="z-image-controlnet",
    title="Z-Image ControlNet",
    classes=("ZImageControlNetModel",),
    rope_axes=RopeAxes(
        dims="axes_dims",
        theta="theta",
        on_rope=True,
        theta_source="the transformer's RopeEmbedder it shares (from_transformer)",
    ),
    pipelines=("ZImageControlNetPipeline", "ZImageControlNetInpaintPipeline"),
    latent=LatentRead("x", "list"),
)

BRIA_FIBO2 = Family(
    name="bria-fibo2",
    title="BriaFibo 2.0",
    classes=("BriaFibo2Transformer2DModel",),
    kind=RopeEmbedderKind(latent="hidden_states", patch="patch_size", patch_in_config=True),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims", theta="rope_theta", theta_source="BriaFibo2Transformer2DModel's config rope_theta"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "BriaFibo2Pipeline: 'the size Fibo 2.0 was trained at for an aspect ratio, about the default area' of "
            "1024 x 1024 px (its comment; no model card read here, no network); VAE 8x, 2x2 patches = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "BriaFibo2Pipeline passes the scheduler's timestep / 1000 (sigma)"),
    rope_attr="rope_embedder",
    rope_classes=("RopeEmbedder",),
    pipelines=("BriaFibo2Pipeline",),
)

FAMILIES = (Z_IMAGE, Z_IMAGE_CONTROLNET, BRIA_FIBO2)
