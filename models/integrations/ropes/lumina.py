"""Lumina2's rope module: positions from the caption mask, complex tables for the text, the image and both.

`Lumina2RotaryPosEmbed(hidden_states, attention_mask)` patchifies the latent and places caption
token j at (j, 0, 0) and image token (r, c) at (L, r, c), L the caption's length (the mask's sum);
it returns the patched latent, the caption's, the image's and the joint sequence's complex tables
(batch, seq, sum(dims) / 2), and the lengths. Beyond the trained grid the replacement rebuilds the
image's and the joint table from those positions: the first axis (an index axis) as trained, height
and width by the method, the logit scale's gain on every token of the image and joint attentions.
The caption's table feeds a text-only refiner, whose attention does not grow with the image: it
stays as trained. Padding rows of the joint table sit at (0, 0, 0), as the module puts them. The
module still patchifies and builds the caption's table, so a grid past its axes_lens (512 tokens a
side by default) fails in the module as it does without a method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, axis_table, plan_key


@dataclass(frozen=True)
class Lumina2Kind(RopeKind):
    """patch: the config key of the patch size."""

    patch: str = "patch_size"
    title: ClassVar[str] = "caption-indexed grid (complex)"

    def make_rope(self, original, setup: RopeSetup) -> Lumina2Rope:
        return Lumina2Rope(original, setup)


def lumina2_position_ids(caption_lengths, grid, total: int) -> torch.Tensor:
    """(batch, total, 3) int64 positions: caption j at (j, 0, 0), image token (r, c) at (L, r, c), zeros after."""
    h, w = grid
    rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
    ids = torch.zeros(len(caption_lengths), total, 3, dtype=torch.long)
    for i, length in enumerate(caption_lengths):
        ids[i, :length, 0] = torch.arange(length)
        ids[i, length : length + h * w] = torch.stack([torch.full_like(rows, length), rows, cols], -1)
    return ids


class Lumina2Rope(ExtrapolatedRope):
    """forward(hidden_states (b, c, h, w), attention_mask (b, L)) -> the module's six outputs."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = int(setup.config[setup.family.kind.patch])

    def _complex(self, ids: torch.Tensor, plan, dtype, device) -> torch.Tensor:
        """The complex table (batch, seq, pairs) at ids, each axis by its scaling, times sqrt(logit_scale)."""
        parts = []
        for axis, (dim, theta, scaling) in enumerate(
            zip(self.setup.dims, self.setup.thetas, self.axis_scalings(plan), strict=True)
        ):
            positions = torch.arange(int(ids[..., axis].max()) + 1, dtype=torch.float64)
            cos, sin = axis_table(dim, theta, scaling, plan.logit_scale, positions)
            parts.append(torch.complex(cos.double(), sin.double())[ids[..., axis]])
        return torch.cat(parts, -1).to(device=device, dtype=dtype)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor):
        out = self.original(hidden_states, attention_mask)
        grid = tuple(n // self.patch_size for n in hidden_states.shape[-2:])
        plan = self.plan(grid)
        if plan is None:
            return out
        patched, caption, _, joint, caption_lengths, seq_lengths = out
        key = (grid, tuple(caption_lengths), joint.shape[1], joint.dtype, joint.device, plan_key(plan))

        def build():
            ids = lumina2_position_ids(caption_lengths, grid, joint.shape[1])
            new_joint = self._complex(ids, plan, joint.dtype, joint.device)
            image = torch.stack([new_joint[i, n : n + math.prod(grid)] for i, n in enumerate(caption_lengths)])
            return image, new_joint

        image, new_joint = self.cached(key, build)
        return patched, caption, image, new_joint, caption_lengths, seq_lengths
