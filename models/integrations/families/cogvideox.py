"""CogVideoX 1.0 / 1.5 (diffusers `CogVideoXTransformer3DModel`): its `image_rotary_emb` argument replaced.

CogVideoX has no rope module: `CogVideoXPipeline._prepare_rotary_positional_embeddings` builds
cos, sin (seq, head_dim) once per call (diffusers' `get_3d_rotary_pos_embed`: axes (t, y, x)
of head_dim / 4, 3 head_dim / 8, 3 head_dim / 8 channels, theta 10000, each pair's value twice)
and passes them to every step. The transformer's forward pre-hook here swaps that argument for
the extrapolated table of the grid of `hidden_states` (b, frames, c, h, w) at the step's time;
where the method leaves the encoding as trained it passes the pipeline's own table through.

An axis the method scales gets token-index positions 0 .. n - 1 and the method's frequencies;
the other axes keep the pipeline's own columns (bit for bit, times the logit scale's gain).
So "none" is the pipeline as it is: CogVideoX 1.0's pipeline squeezes spatial grids larger than
its base into it (crop-region linspace positions, which is position interpolation, what "pi"
gives here too), and riflex changes the time axis only, over the pipeline's spatial positions,
as RIFLEx's own CogVideoX code does.

Time: CogVideoXPipeline passes DDIM/DPM steps 0 .. 999: t = timestep / 1000.

RIFLEx (thu-ml/RIFLEx, cogvideox.py): k = 2 (1-based), N_k = 20 latent frames for CogVideoX-5B
(temporal channels 16, theta 10000). CogVideoX 1.5 (temporal patch 2) derives its k the same way
(`Family.riflex_index`), which also gives 2.
"""

from __future__ import annotations

import itertools
import math

import torch

from axialrope import rope_frequencies

from .base import ExtrapolatedRope, Family, TrainedGrid, grid_table, index_positions, plan_key, tensor_key


def cogvideox_axes_dims(head_dim: int) -> tuple[int, int, int]:
    return head_dim // 4, head_dim // 8 * 3, head_dim // 8 * 3


class CogVideoXRope(ExtrapolatedRope):
    """tables(grid, given) -> cos, sin (seq, head_dim) of a (t, h, w) token grid from the pipeline's
    table `given`, or None where `given` stays as it is."""

    def __init__(self, transformer, *args, **kwargs):
        super().__init__(None, *args, **kwargs)
        config = transformer.config
        self.axes_dims = cogvideox_axes_dims(config.attention_head_dim)
        self.patch_size, self.patch_size_t = config.patch_size, config.patch_size_t

    def grid_of(self, hidden_states: torch.Tensor) -> tuple[int, int, int]:
        frames, _, height, width = hidden_states.shape[1:]
        if self.patch_size_t is not None:  # CogVideoX 1.5 packs frames in pairs (the pipeline pads them)
            frames = (frames + self.patch_size_t - 1) // self.patch_size_t
        return frames, height // self.patch_size, width // self.patch_size

    def planned_axes(self):
        return [(d, 10000.0) for d in self.axes_dims]

    def tables(self, grid: tuple[int, int, int], given: tuple[torch.Tensor, torch.Tensor]):
        plan = self.plan(grid)
        if plan is None:
            return None
        if given[0].shape[0] != math.prod(grid):
            raise ValueError(f"image_rotary_emb has {given[0].shape[0]} rows for a grid of {grid} tokens")

        def build():
            cos, sin = grid_table(self.axes_dims, (10000.0,) * 3, plan.scalings, plan.logit_scale,
                                  index_positions(grid, given[0].device), full=True)
            gain = math.sqrt(plan.logit_scale)
            out = [table.float() * gain for table in given]
            edges = [0, *itertools.accumulate(self.axes_dims)]
            for axis, scaling in enumerate(plan.scalings):
                if scaling is not None:  # this axis's column block: the method's, on index positions
                    columns = slice(edges[axis], edges[axis + 1])
                    out[0][:, columns], out[1][:, columns] = cos[:, columns], sin[:, columns]
            return tuple(t.to(given[0].dtype) for t in out)

        return self.cached((grid, *(tensor_key(t) for t in given), plan_key(plan)), build, anchors=tuple(given))

    def forward(self, hidden_states: torch.Tensor, image_rotary_emb: tuple[torch.Tensor, torch.Tensor]):
        """The table for `hidden_states`' grid, or None where the pipeline's own table stays."""
        return self.tables(self.grid_of(hidden_states), image_rotary_emb)


class CogVideoX(Family):
    name = "cogvideox"
    class_names = ("CogVideoXTransformer3DModel",)
    video = True
    rope_attr = None
    timestep_scale = 1000.0
    published_riflex_index = 2

    def trained_grid(self, transformer) -> TrainedGrid:
        from ..trained_grids import TRAINED_GRIDS

        return TRAINED_GRIDS["cogvideox" if transformer.config.patch_size_t is None else "cogvideox-1.5"]

    def check(self, transformer) -> None:
        super().check(transformer)
        if not transformer.config.use_rotary_positional_embeddings:
            raise ValueError("this CogVideoX uses absolute positions (use_rotary_positional_embeddings=False, "
                             "e.g. CogVideoX-2b): there is no RoPE to extrapolate")

    def published_riflex_index_for(self, transformer) -> int | None:
        config = transformer.config  # the authors' k is CogVideoX-5B's (1.0, 16 temporal channels)
        return self.published_riflex_index if config.patch_size_t is None and config.attention_head_dim == 64 else None

    def temporal_inv_freq(self, transformer) -> torch.Tensor:
        return rope_frequencies(cogvideox_axes_dims(transformer.config.attention_head_dim)[0], 10000.0)[0]

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return CogVideoXRope(transformer, extrapolation, trained_grid, time, cache_size)

    def before_forward(self, rope: CogVideoXRope, args, kwargs):
        position = 5  # forward(hidden_states, encoder_hidden_states, timestep, timestep_cond, ofs, image_rotary_emb)
        given = kwargs.get("image_rotary_emb", args[position] if len(args) > position else None)
        if given is None:
            return None  # no rotary table passed: nothing to replace
        hidden_states = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
        table = rope(hidden_states, given)
        if table is None:
            return None  # the pipeline's own table, untouched
        if "image_rotary_emb" in kwargs or len(args) <= position:
            kwargs = {**kwargs, "image_rotary_emb": table}
        else:
            args = args[:position] + (table,) + args[position + 1:]
        return args, kwargs
