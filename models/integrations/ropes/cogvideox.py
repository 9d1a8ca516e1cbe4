"""CogVideoX's (and ConsisID's) rope tables, which the pipeline builds and passes in, swapped per step.

CogVideoXPipeline builds cos, sin (seq, head_dim) once per call (diffusers'
`get_3d_rotary_pos_embed`: axes (t, y, x) of head_dim / 4, 3 head_dim / 8, 3 head_dim / 8
channels, theta 10000, each pair's value twice) and passes them to every step as
`image_rotary_emb`. The transformer's forward pre-hook swaps that argument for the extrapolated
table of the grid of `hidden_states` at the step's time; where the method leaves the encoding as
trained it passes the pipeline's own table through.

Columns: an axis the method scales gets token-index positions 0 .. n - 1 and the method's
frequencies. Once a spatial axis is scaled, every spatial axis takes token-index positions
(an unscaled one with its trained frequencies), so an axis within its trained length does not
keep the pipeline's squeezed positions while the other gets the method. Otherwise (none, riflex)
the pipeline's own columns stay, bit for bit, times the logit scale's gain: "none" is the
pipeline as it is, and riflex changes the time axis only, as RIFLEx's own CogVideoX code does.

Time: CogVideoXPipeline passes DDIM/DPM steps 0 .. 999. RIFLEx (thu-ml/RIFLEx, cogvideox.py):
k = 2, N_k = 20 for CogVideoX-5B; their CogVideoX 1.5 branch passes no k, so riflex leaves 1.5's
table as trained unless `riflex_index` is given. CogVideoX-2b (absolute positions) has no rope and
is refused. ConsisID's pipeline is CogVideoX 1.0's (no temporal patch); ConsisIDPipeline passes
the CogVideoX DPM scheduler's steps 0 .. 999.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from ..family import Family, RiflexK, RopeAxes, Timestep, TrainedGrid
from .base import GivenTableRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key, tensor_key


@dataclass(frozen=True)
class PipelineTablesKind(RopeKind):
    """argument: the transformer's forward argument holding the pipeline's (cos, sin).
    patch: config keys of the patch sizes (t, h, w); a None value or missing key counts as 1 (frames padded up).
    """

    argument: str = "image_rotary_emb"
    patch: tuple[str, str, str] = ("patch_size_t", "patch_size", "patch_size")
    title: ClassVar[str] = "tables from the pipeline"

    def make_rope(self, original, setup: RopeSetup) -> PipelineTablesRope:
        return PipelineTablesRope(None, setup)


class PipelineTablesRope(GivenTableRope):
    """tables(grid, given) -> cos, sin (seq, head_dim) of a (t, h, w) token grid from the pipeline's
    table `given`, or None where `given` stays as it is."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = tuple(setup.config.get(key) or 1 for key in setup.family.kind.patch)

    def grid_of(self, hidden_states: torch.Tensor) -> tuple[int, int, int]:
        """The token grid of hidden_states (b, frames, c, h, w)."""
        frames, _, height, width = hidden_states.shape[1:]
        p_t, p_h, p_w = self.patch_size
        return -(-frames // p_t), height // p_h, width // p_w  # CogVideoX 1.5 pads frames to pairs

    def tables(self, grid: tuple[int, int, int], given: tuple[torch.Tensor, torch.Tensor]):
        plan = self.plan(grid)
        if plan is None:
            return None
        if given[0].shape[0] != math.prod(grid):
            raise ValueError(f"image_rotary_emb has {given[0].shape[0]} rows for a grid of {grid} tokens")
        scalings = self.axis_scalings(plan)
        roles = self.setup.family.axes
        spatial_scaled = any(s is not None for s, role in zip(scalings, roles, strict=True) if role == "spatial")
        ours = [
            s is not None or (spatial_scaled and role == "spatial") for s, role in zip(scalings, roles, strict=True)
        ]

        def build():
            cos, sin = grid_table(
                self.setup.dims,
                self.setup.thetas,
                scalings,
                plan.logit_scale,
                index_positions(grid),
                given[0].device,
                full=True,
            )
            gain = math.sqrt(plan.logit_scale)
            out = [table.float() * gain for table in given]
            edges = [0, *itertools.accumulate(self.setup.dims)]
            for axis, replaced in enumerate(ours):
                if replaced:  # this axis's column block: token-index positions, the method's frequencies
                    columns = slice(edges[axis], edges[axis + 1])
                    out[0][:, columns], out[1][:, columns] = cos[:, columns], sin[:, columns]
            return tuple(t.to(given[0].dtype) for t in out)

        return self.cached((grid, *(tensor_key(t) for t in given), plan_key(plan)), build, anchors=tuple(given))

    def forward(self, hidden_states: torch.Tensor, image_rotary_emb: tuple[torch.Tensor, torch.Tensor]):
        """The table for `hidden_states`' grid, or None where the pipeline's own table stays."""
        return self.tables(self.grid_of(hidden_states), image_rotary_emb)


# -- families ------------------------------------------------------------------------------------------------


def cogvideox_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    return head_dim // 4, head_dim // 8 * 3, head_dim // 8 * 3


COGVIDEOX = Family(
    name="cogvideox",
    title="CogVideoX 1.0 / 1.5",
    classes=("CogVideoXTransformer3DModel",),
    kind=PipelineTablesKind(argument="image_rotary_emb"),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=cogvideox_axes_dims,
        theta=10000.0,
        theta_source="get_3d_rotary_pos_embed's default, which CogVideoXPipeline uses",
    ),
    trained=(
        TrainedGrid(
            (11, 48, 85),
            "CogVideoX1.5-5B model card: 81 frames (5 s at 16 fps) at 768 x 1360 px; VAE 8x spatial, 4x temporal "
            "(21 latent frames, padded to 22 by CogVideoXPipeline), patch 2, temporal patch 2",
            pipeline_default=(7, 48, 85),  # CogVideoXPipeline's 49 frames at the config's sample size
            when=(("patch_size_t", 2),),
            label="CogVideoX 1.5, patch_size_t 2",
        ),
        TrainedGrid(
            (13, 30, 45),
            "CogVideoX-5B (1.0): 49 frames (6 s at 8 fps) at 480 x 720 px; the transformer's own config says so "
            "(sample_frames 49, sample_height 60, sample_width 90 latent pixels); VAE 8x spatial, 4x temporal "
            "(13 latent frames), patch 2",
        ),
    ),
    time=Timestep(1000.0, "CogVideoXPipeline passes DDIM/DPM steps 0 .. 999"),
    riflex=(
        RiflexK(2, "thu-ml/RIFLEx cogvideox.py (N_k = 20)", when=(("patch_size_t", None), ("attention_head_dim", 64))),
        RiflexK(None, "thu-ml/RIFLEx cogvideox.py: its CogVideoX 1.5 branch passes no k", when=(("patch_size_t", 2),)),
    ),
    requires=(("use_rotary_positional_embeddings", True),),
    requires_reason="this CogVideoX uses absolute positions (use_rotary_positional_embeddings=False, e.g. "
    "CogVideoX-2b): there is no RoPE to extrapolate",
    pipelines=("CogVideoXPipeline", "CogVideoXImageToVideoPipeline", "CogVideoXVideoToVideoPipeline"),
)

CONSISID = replace(
    COGVIDEOX,
    name="consisid",
    title="ConsisID",
    classes=("ConsisIDTransformer3DModel",),
    trained=(
        TrainedGrid(
            (13, 30, 45),
            "ConsisIDPipeline's defaults, 49 frames at 480 x 720 px, which are the transformer's own config "
            "(sample_frames "
            "49, sample_height 60, sample_width 90 latent pixels) as for CogVideoX-5B it is built on; VAE 8x "
            "spatial, 4x "
            "temporal (13 latent frames), patch 2; the model card was not read",
        ),
    ),
    riflex=(),
    pipelines=("ConsisIDPipeline",),
)

FAMILIES = (COGVIDEOX, CONSISID)
