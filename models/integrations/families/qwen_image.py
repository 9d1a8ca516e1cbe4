"""Qwen-Image (diffusers `QwenImageTransformer2DModel`): `pos_embed` (`QwenEmbedRope`) replaced.

`QwenEmbedRope(img_shapes, device, max_txt_seq_len)` returns complex64 tables (vid (seq, 64),
txt (txt_len, 64)) over axes (frame, y, x) of (16, 56, 56) channels. Image i's frames sit at
positions i .. i + frames - 1; with scale_rope (the model's setting) y and x are centred,
-(h - h // 2) .. h // 2 - 1; text token j sits at max(h // 2, w // 2) + j on all three axes.

The replacement keeps those positions and gives y and x the method; each axis's frequencies
serve every token on that axis, text included, so text-image logits stay relative. The frame
axis stays as trained. The grid is the largest (h, w) over the forward's images.

Time: QwenImagePipeline passes timestep = sigma (t / 1000), so t = timestep.
"""

from __future__ import annotations

import torch

from .base import ExtrapolatedRope, Family, axial_table, grid_table, plan_key


def _axis_positions(n: int, centred: bool) -> torch.Tensor:
    """Qwen's positions of n tokens on y or x: centred (scale_rope) or 0 .. n - 1."""
    positions = torch.arange(n, dtype=torch.float64)
    return positions - (n - n // 2) if centred else positions


class QwenImageRope(ExtrapolatedRope):
    """forward(video_fhw, device, max_txt_seq_len) -> (vid, txt) complex64, as `QwenEmbedRope`."""

    def __init__(self, original, *args, **kwargs):
        super().__init__(original, *args, **kwargs)
        self.axes_dims = tuple(original.axes_dim)
        self.theta = float(original.theta)
        self.scale_rope = bool(original.scale_rope)

    def planned_axes(self):
        return [(self.axes_dims[1], self.theta), (self.axes_dims[2], self.theta)]

    @staticmethod
    def shapes_of(video_fhw) -> list[tuple[int, int, int]]:
        """The first sample's list of (frames, h, w), as QwenEmbedRope reads img_shapes."""
        if isinstance(video_fhw, list):
            video_fhw = video_fhw[0]
        if not isinstance(video_fhw, list):
            video_fhw = [video_fhw]
        return [tuple(int(n) for n in fhw) for fhw in video_fhw]

    def text_positions(self, shapes: list[tuple[int, int, int]], text_tokens: int) -> torch.Tensor:
        """(text_tokens, 3) float64: text token j at max(h // 2, w // 2) + j on every axis (max(h, w)
        without scale_rope), the largest over the images."""
        last = max(max((h // 2, w // 2) if self.scale_rope else (h, w)) for _, h, w in shapes)
        return (last + torch.arange(text_tokens, dtype=torch.float64))[:, None].expand(-1, 3)

    def forward(self, video_fhw, device: torch.device | None = None, max_txt_seq_len=None):
        shapes = self.shapes_of(video_fhw)
        grid = (max(h for _, h, _ in shapes), max(w for _, _, w in shapes))
        plan = self.plan(grid)
        if plan is None:
            return self.original(video_fhw, device=device, max_txt_seq_len=max_txt_seq_len)
        if max_txt_seq_len is None:
            raise ValueError("`max_txt_seq_len` must be provided.")
        text_tokens = int(max_txt_seq_len)
        device = torch.device(device) if device is not None else torch.device("cpu")

        scalings = (None, *plan.scalings)  # the frame axis stays as trained

        def build():
            images = []
            for index, (frames, height, width) in enumerate(shapes):
                positions = [torch.arange(index, index + frames, dtype=torch.float64),
                             _axis_positions(height, self.scale_rope), _axis_positions(width, self.scale_rope)]
                images.append(grid_table(self.axes_dims, (self.theta,) * 3, scalings, plan.logit_scale,
                                         [p.to(device) for p in positions]))
            text = self.text_positions(shapes, text_tokens).to(device)
            tables = [torch.complex(*table) for table in images]
            tables.append(torch.complex(*axial_table(self.axes_dims, (self.theta,) * 3, scalings, plan.logit_scale,
                                                     text)))
            return torch.cat(tables[:-1]), tables[-1]

        return self.cached((tuple(shapes), text_tokens, device, plan_key(plan)), build)


class QwenImage(Family):
    name = "qwen-image"
    class_names = ("QwenImageTransformer2DModel",)
    rope_attr = "pos_embed"
    timestep_scale = 1.0

    def check(self, transformer) -> None:
        super().check(transformer)
        from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope

        if type(transformer.pos_embed) is not QwenEmbedRope:
            raise ValueError(f"Qwen-Image with {type(transformer.pos_embed).__name__} (use_layer3d_rope) is not "
                             "supported; only QwenEmbedRope")

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return QwenImageRope(transformer.pos_embed, extrapolation, trained_grid, time, cache_size)
