"""Mochi's rope: learned frequencies mixing the axes, `rope(pos_frequencies, num_frames, height, width)`.

MochiRoPE gives a token at (t, y, x) the angles t f_t + y f_y + x f_x per head and pair, f the
model's learned `pos_frequencies` (3, heads, pairs), and returns cos, sin (seq, heads, pairs). Time
positions are frame indices 0 .. n - 1; y and x are cell centres scaled so that the grid's area
is always 192 x 192 position units (the module interpolates them itself at any size). So only the
time axis meets positions beyond its trained length, and only methods that move positions, not
frequencies of a theta, have a meaning: PI divides its positions by s (kappa-PI by s^(t^2)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import einsum

from .base import ExtrapolatedRope, RopeKind, RopeSetup, tensor_key

METHODS = ("none", "pi", "kappa-pi")  # those that act on positions alone


@dataclass(frozen=True)
class MochiKind(RopeKind):
    title: ClassVar[str] = "learned frequencies (Mochi)"

    def make_rope(self, original, setup: RopeSetup) -> MochiRope:
        return MochiRope(original, setup)


class MochiRope(ExtrapolatedRope):
    """forward(pos_frequencies (3, heads, pairs), num_frames, height, width, device, dtype) -> cos, sin
    (num_frames * height * width, heads, pairs) float32, as MochiRoPE."""

    def forward(self, pos_frequencies, num_frames, height, width, device=None, dtype=None):
        plan = self.plan((int(num_frames),))
        if plan is None:
            return self.original(pos_frequencies, num_frames, height, width, device=device, dtype=dtype)
        device = pos_frequencies.device if device is None else device
        scaling = plan.scalings[0]  # PI's (linear) or None
        factor = 1.0 if scaling is None else float(scaling.factor)

        def build():
            positions = self.original._get_positions(num_frames, height, width, torch.device("cpu"), torch.float64)
            positions[:, 0] /= factor  # PI's positions on the time axis
            angles = einsum(positions, pos_frequencies.detach().to("cpu", torch.float64), "n a, a h f -> n h f")
            gain = math.sqrt(plan.logit_scale)
            return (
                (torch.cos(angles) * gain).to(device, torch.float32),
                (torch.sin(angles) * gain).to(device, torch.float32),
            )

        key = (
            tensor_key(pos_frequencies),
            int(num_frames),
            int(height),
            int(width),
            torch.device(device),
            factor,
            plan.logit_scale,
        )
        return self.cached(key, build, anchors=(pos_frequencies,))
