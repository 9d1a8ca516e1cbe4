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

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, axial_table, plan_key
from .qwen_image import _covering, centred_positions
from .references import reference_rule


@dataclass(frozen=True)
class Qwen21Kind(RopeKind):
    """QwenImage21Rope (called with img_shapes, image_pad_mask and device)."""

    title: ClassVar[str] = "joint sequence (Qwen-Image 2.1)"
    options: ClassVar[tuple[str, ...]] = ("reference",)

    def make_rope(self, original, setup: RopeSetup) -> Qwen21Rope:
        reference_rule(setup.options)
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
