"""QwenEmbedRope: complex tables for the images of `img_shapes` and the text after them.

`QwenEmbedRope(video_fhw, device, max_txt_seq_len)` returns complex64 tables (vid (seq, pairs),
txt (txt_len, pairs)) over axes (frame, y, x). Image i's frames sit at positions i .. i + f - 1;
with scale_rope (the model's setting) y and x are centred, -(h - h // 2) .. h // 2 - 1; text
token j sits at max(h // 2, w // 2) + j on all three axes. The grid is the largest (h, w) over
the forward's images; the frame axis is a reference axis and stays as trained.

Text tokens, option `dype_variant`:
- "qwen" (default): as DyPE's Qwen-Image code for the dype-* methods: text keeps the trained
  table (no gain) and t = 1 - timestep / 1000 (their conversion of the sigma the pipeline passes).
- "flux": as DyPE's Flux code: every token on an axis, text included, gets the method's
  frequencies and gain (so text-image logits stay relative), and t = timestep.
The other methods always take the "flux" rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, axial_table, grid_table, plan_key

DYPE_VARIANTS = ("qwen", "flux")


@dataclass(frozen=True)
class QwenKind(RopeKind):
    """QwenEmbedRope and its copies (called with img_shapes, device and max_txt_seq_len)."""

    title: ClassVar[str] = "QwenEmbedRope"
    options: ClassVar[tuple[str, ...]] = ("dype_variant",)

    def make_rope(self, original, setup: RopeSetup) -> QwenRope:
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
        self.authors_qwen = (setup.options.get("dype_variant", "qwen") == "qwen"
                             and setup.extrapolation.method.startswith("dype-"))

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
        """The first text position: max(h // 2, w // 2) over the images (max(h, w) without scale_rope)."""
        return max(max((h // 2, w // 2) if self.scale_rope else (h, w)) for _, h, w in shapes)

    def forward(self, video_fhw, device: torch.device | None = None, max_txt_seq_len=None):
        shapes = self.shapes_of(video_fhw)
        plan = self.plan((max(h for _, h, _ in shapes), max(w for _, _, w in shapes)))
        if plan is None:
            return self.original(video_fhw, device=device, max_txt_seq_len=max_txt_seq_len)
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")
        text_tokens = int(max_txt_seq_len)
        device = torch.device(device) if device is not None else torch.device("cpu")
        dims, thetas, scalings = self.setup.dims, self.setup.thetas, self.axis_scalings(plan)

        def build():
            tables = []
            for index, (frames, height, width) in enumerate(shapes):
                positions = [torch.arange(index, index + frames, dtype=torch.float64),
                             centred_positions(height, self.scale_rope), centred_positions(width, self.scale_rope)]
                tables.append(torch.complex(*grid_table(dims, thetas, scalings, plan.logit_scale, positions, device)))
            start = self.text_start(shapes)
            if self.authors_qwen:  # the trained table, exactly as QwenEmbedRope gives it
                text = self.original.pos_freqs[start:start + text_tokens].to(device)
            else:
                where = (start + torch.arange(text_tokens, dtype=torch.float64))[:, None].expand(-1, 3)
                text = torch.complex(*axial_table(dims, thetas, scalings, plan.logit_scale, where, device))
            return torch.cat(tables), text

        return self.cached((tuple(shapes), text_tokens, device, plan_key(plan)), build)
