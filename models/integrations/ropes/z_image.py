"""Z-Image's RopeEmbedder and its copies (Z-Image ControlNet, BriaFibo 2.0): integer ids, complex tables.

`rope(ids)` with ids (seq, 3) integers (a plane index, y, x) returns complex64 (seq, pairs): each
axis's table gathered at its column. The transformer builds the ids inside its forward and calls
the rope several times (the image, the caption, BriaFibo 2.0's gist tokens, Z-Image Omni's SigLIP
tokens), so the plan of every call of a forward follows the generated image's token grid, read
from the forward's latent argument (`RopeEmbedderKind.latent`, its last two dims over the patch),
and the ids' plane axis stays as trained. Reference images (Z-Image Omni, BriaFibo 2.0's context
latents) keep their positions. Z-Image's RopeEmbedder is a plain object, not a module: the
replacement is set as a plain attribute; Z-Image's ControlNet shares the transformer's object
(`from_transformer`) and is patched with its own replacement of it when a pipeline is passed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

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
