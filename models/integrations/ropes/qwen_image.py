"""QwenEmbedRope: complex tables for the images of `img_shapes` and the text after them.

`QwenEmbedRope(video_fhw, device, max_txt_seq_len)` returns complex64 tables (vid (seq, pairs),
txt (txt_len, pairs)) over axes (frame, y, x). Image i's frames sit at positions i .. i + f - 1;
with scale_rope (the model's setting) y and x are centred, -(h - h // 2) .. h // 2 - 1; text
token j sits at max(h // 2, w // 2) + j on all three axes, over all images. The grid is the
generated image's (h, w), the first of `img_shapes`; Qwen-Image-Edit appends its reference images
after it, at frames 1, 2, ... (the `reference` option, `references.py`: "cover" maps each reference
onto the generated image's extent; "keep" leaves the pipeline's positions and takes the largest
(h, w) over all images). The frame axis is a reference axis and stays as trained.

Text tokens, option `dype_variant`:
- "qwen" (default): as DyPE's Qwen-Image code for the dype-* methods: text keeps the trained
  table (no gain) and t = 1 - timestep / 1000 (their conversion of the sigma the pipeline passes).
- "flux": as DyPE's Flux code: every token on an axis, text included, gets the method's
  frequencies and gain (so text-image logits stay relative), and t = timestep.
The other methods always take the "flux" rule.

Qwen-Image-Layered (`use_layer3d_rope`, QwenEmbedLayer3DRope) puts its generated layers at frames
0, 1, ... and its condition image, the last of `img_shapes`, at frame -1; its text starts after
the layers' count too. NucleusMoEEmbedRope is a copy of QwenEmbedRope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, axial_table, grid_table, plan_key
from .references import Extent, cover_map, reference_rule

DYPE_VARIANTS = ("qwen", "flux")


@dataclass(frozen=True)
class QwenKind(RopeKind):
    """QwenEmbedRope and its copies (called with img_shapes, device and max_txt_seq_len)."""

    title: ClassVar[str] = "QwenEmbedRope"
    options: ClassVar[tuple[str, ...]] = ("dype_variant", "reference")

    def make_rope(self, original, setup: RopeSetup) -> QwenRope:
        reference_rule(setup.options)
        variant = setup.options.get("dype_variant", "qwen")
        if variant not in DYPE_VARIANTS:
            raise ValueError(f"dype_variant must be one of {DYPE_VARIANTS}, got {variant!r}")
        return QwenRope(original, setup)


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
        self.authors_qwen = setup.options.get(
            "dype_variant", "qwen"
        ) == "qwen" and setup.extrapolation.method.startswith("dype-")

    def t(self) -> float:
        if self.authors_qwen:  # DyPE's Qwen code: t = 1 - timestep / 1000, the timestep being sigma here
            return min(max(1.0 - self.call_state().raw() / 1000.0, 0.0), 1.0)
        return super().t()

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

    def grid(self, shapes: list[tuple[int, int, int]]) -> tuple[int, int]:
        """The (h, w) the plan is for: the generated image's ("cover"), the largest over all images ("keep")."""
        if self.reference_rule == "cover":
            return shapes[0][1:]
        return max(h for _, h, _ in shapes), max(w for _, _, w in shapes)

    def image_positions(self, shapes: list[tuple[int, int, int]]) -> list[list[torch.Tensor]]:
        """Per image, its (frame, y, x) positions (float64): frames index .. index + f - 1 (Qwen-Image-Layered's
        condition image at -1), y and x as QwenEmbedRope places them, a reference's mapped onto the
        generated image's extent under "cover"."""
        out_y, out_x = (centred_positions(n, self.scale_rope) for n in shapes[0][1:])
        positions = []
        for index, (frames, height, width) in enumerate(shapes):
            ys, xs = centred_positions(height, self.scale_rope), centred_positions(width, self.scale_rope)
            if index and self.reference_rule == "cover":
                ys, xs = (_covering(own, out) for own, out in ((ys, out_y), (xs, out_x)))
            first = -1 if self.layered and index == len(shapes) - 1 else index  # Layered's condition image: -1
            positions.append([torch.arange(first, first + frames, dtype=torch.float64), ys, xs])
        return positions

    def forward(self, video_fhw, device: torch.device | None = None, max_txt_seq_len=None):
        shapes = self.shapes_of(video_fhw)
        plan = self.plan(self.grid(shapes))
        if plan is None:
            return self.original(video_fhw, device=device, max_txt_seq_len=max_txt_seq_len)
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")
        text_tokens = int(max_txt_seq_len)
        device = torch.device(device) if device is not None else torch.device("cpu")
        dims, thetas, scalings = self.setup.dims, self.setup.thetas, self.axis_scalings(plan)

        def build():
            tables = [
                torch.complex(*grid_table(dims, thetas, scalings, plan.logit_scale, positions, device))
                for positions in self.image_positions(shapes)
            ]
            start = self.text_start(shapes)
            if self.authors_qwen:  # the trained table, exactly as QwenEmbedRope gives it
                text = self.original.pos_freqs[start : start + text_tokens].to(device)
            else:
                where = (start + torch.arange(text_tokens, dtype=torch.float64))[:, None].expand(-1, 3)
                text = torch.complex(*axial_table(dims, thetas, scalings, plan.logit_scale, where, device))
            return torch.cat(tables), text

        return self.cached((tuple(shapes), text_tokens, device, plan_key(plan)), build)


def _covering(own: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    """A reference's positions on one axis mapped onto the output's extent (unchanged where they match)."""
    scale, offset = cover_map(Extent(float(own[0]), float(own[-1])), Extent(float(output[0]), float(output[-1])))
    return own if (scale, offset) == (1.0, 0.0) else own * scale + offset
