"""Cosmos 3's omni rope (video, image, sound, actions): interleaved MRoPE over the packed sequence's ids.

`Cosmos3VLTextRotaryEmbedding(position_ids (3, b, L), device, dtype)` takes one list of head_dim / 2
inverse frequencies (theta `rope_theta`), deals pair j to h (j = 1 mod 3, j < 3 section_h), w (j = 2
mod 3, j < 3 section_w) or t as `ideogram4.py`'s `pair_axes` does (`rope_axes_dim`), and returns the
half-width angles twice (b, L, head_dim). Cosmos3OmniPipeline numbers text token i (i, i, i) and puts
the generated stream (vision, and the sound and action streams beside it in time) after a margin:
t from und_len + unified_3d_mrope_temporal_modality_margin (15000) on, y and x from 0 (or from that
offset without reset_spatial_ids). The forward's `vision_token_shapes` give the grid (t, y, x); its
time spacing is read from the positions (base_fps / fps with fps modulation). Beyond the trained
grid the generated rows take `interleaved_angles` about their own origin (each axis's least
position), so generated tokens see each other through the method and text sees their origin as
trained; the text rows stay as trained; every row carries the logit scale's gain. Time:
Cosmos3OmniPipeline passes its UniPC scheduler's timesteps, sigma * 1000, as `vision_timesteps`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from axialrope import rope_frequencies

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, argument, plan_key, tensor_key
from .ideogram4 import interleaved_angles, pair_axes


@dataclass(frozen=True)
class Cosmos3Kind(RopeKind):
    title: ClassVar[str] = "interleaved MRoPE of a packed omni sequence (Cosmos 3)"

    def make_rope(self, original, setup: RopeSetup) -> Cosmos3Rope:
        return Cosmos3Rope(original, setup)

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        """The whole list with the pairs that do not rotate with t set to infinity (a period of 0, never RIFLEx's
        k), so k indexes the list the tables take; one position unit per latent frame at the pipeline's default
        fps, which equals base_fps (24)."""
        head_dim, theta = setup.dims[0], setup.thetas[0]
        inv_freq = rope_frequencies(head_dim, theta)[0].clone()
        inv_freq[pair_axes(head_dim // 2, setup.config["rope_axes_dim"]) != 0] = math.inf
        return inv_freq, 1.0


class Cosmos3Rope(ExtrapolatedRope):
    """forward(position_ids (3, b, L), device, dtype) -> cos, sin (b, L, head_dim) as Cosmos3VLTextRotaryEmbedding."""

    def call_inputs(self, args, kwargs, parameters) -> dict:
        return {
            name: argument(name, args, kwargs, parameters)
            for name in ("und_len", "vision_token_shapes", "vision_sequence_indexes")
        }

    def forward(self, position_ids: torch.Tensor, device, dtype):
        out = self.original(position_ids, device=device, dtype=dtype)
        inputs = getattr(self.call_state(), "inputs", {})
        shapes, und_len, where = (
            inputs.get(name) for name in ("vision_token_shapes", "und_len", "vision_sequence_indexes")
        )
        if not shapes or und_len is None or where is None or position_ids.ndim != 3 or position_ids.shape[1] != 1:
            return out  # no generated grid in this call (or a batch the model never packs): as trained
        grid = tuple(max(int(shape[a]) for shape in shapes) for a in range(3))
        if all(n <= trained for n, trained in zip(grid, self.trained_grid, strict=True)):
            return out  # the trained encoding: no positions read
        ids = rearrange(position_ids[:, 0].detach().to("cpu", torch.float64), "a l -> l a")
        frames, height, width = (int(n) for n in shapes[0])  # the first vision item (the pipeline packs one)
        first = int(where[0])
        step = float(ids[first + height * width, 0] - ids[first, 0]) if frames > 1 else 1.0
        plan = self.plan(grid, (step, 1.0, 1.0))
        if plan is None:
            return out

        def build():
            head_dim, theta = self.setup.dims[0], self.setup.thetas[0]
            axes = pair_axes(head_dim // 2, self.setup.config["rope_axes_dim"])
            generated = ids[und_len:]
            angles, gains = interleaved_angles(
                generated, generated.amin(0), axes, head_dim, theta, self.axis_scalings(plan)
            )
            gain = math.sqrt(plan.logit_scale)
            tables = []
            for f, trained in zip((torch.cos, torch.sin), out, strict=True):
                rows = torch.cat([f(angles) * gains] * 2, -1) * gain
                text = trained[0, :und_len].to("cpu", torch.float64) * gain
                tables.append(torch.cat([text, rows])[None].to(trained))
            return tuple(tables)

        return self.cached((tensor_key(position_ids), int(und_len), plan_key(plan)), build, anchors=(position_ids,))


# -- families ------------------------------------------------------------------------------------------------


def whole_head(config) -> tuple[int, int, int]:
    """Each axis draws its pairs from the whole head's frequency list: head_dim per axis."""
    return (int(config["head_dim"]),) * 3


COSMOS3 = Family(
    name="cosmos3",
    title="Cosmos 3",
    classes=("Cosmos3OmniTransformer",),
    kind=Cosmos3Kind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=whole_head, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (48, 23, 40),
            "Cosmos3OmniPipeline's default, 189 frames at 720 x 1280 px and 24 fps, stands in for the trained one (the "
            "model card was not read); VAE 4x temporal, 16x spatial, patch 2: (189 - 1) / 4 + 1 latent frames, "
            "ceil(45 / 2) x 40 patches",
        ),
    ),
    time=Timestep(
        1000.0,
        "Cosmos3OmniPipeline passes its scheduler's timesteps, sigma * 1000, as vision_timesteps",
        argument="vision_timesteps",
    ),
    rope_attr="rotary_emb",
    rope_classes=("Cosmos3VLTextRotaryEmbedding",),
    pipelines=("Cosmos3OmniPipeline",),
    makes_video=True,
    no_latent="its forward takes the token ids of one multimodal sequence, not a latent on a grid",
)

FAMILIES = (COSMOS3,)
