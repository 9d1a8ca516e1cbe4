"""Ideogram 4; see `rope_kinds/mrope.py`.

Ideogram4MRoPE: one list of attention_head_dim / 2 inverse frequencies, theta `rope_theta`, its pairs
interleaved among (t, y, x) by `mrope_section`; the image sits at t = 65536 (an index axis kept as
trained), y and x 65536 + 0 .. n - 1. Time: Ideogram4Pipeline passes model time 1 - sigma, 0 at noise.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.ideogram4 import InterleavedMRopeKind


def whole_head(config) -> tuple[int, int, int]:
    """Each axis draws its pairs from the whole head's frequency list: head_dim per axis."""
    head_dim = int(config["attention_head_dim"])
    return head_dim, head_dim, head_dim


IDEOGRAM4 = Family(
    name="ideogram4",
    title="Ideogram 4",
    classes=("Ideogram4Transformer2DModel",),
    kind=InterleavedMRopeKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=whole_head, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (128, 128),
            "Ideogram4Pipeline's default and recommended size, 2048 x 2048 px, stands in for the trained one "
            "(the model "
            "card was not read); VAE 8x, patch 2",
        ),
    ),
    time=Timestep(0.0, "Ideogram4Pipeline passes model time 1 - sigma: 0 at noise, 1 at the image", at_clean=1.0),
    rope_attr="rotary_emb",
    rope_classes=("Ideogram4MRoPE",),
    pipelines=("Ideogram4Pipeline",),
)

FAMILIES = (IDEOGRAM4,)
