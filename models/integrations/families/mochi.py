"""Mochi 1, a rope of learned frequencies; see `rope_kinds/mochi.py`.

Its y and x positions are scaled to a fixed area at every size (the model interpolates them
itself), so its trained grid is its time axis alone and y, x are kept as the module places them.
The learned frequencies have no theta: NTK, YaRN, DyPE and RIFLEx, which change frequencies of a
theta, have no meaning; PI and kappa-PI move positions. The dims and theta declared serve only
the plan's identity check. Time: MochiPipeline's scheduler inverts its sigmas, so the transformer
gets (1 - sigma) * 1000: 0 at pure noise, 1000 clean.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.mochi import METHODS, MochiKind


def mochi_axes_dims(config) -> tuple[int, int, int]:
    """Every axis adds to every pair's angle: each spans the head."""
    return (int(config["attention_head_dim"]),) * 3


MOCHI = Family(
    name="mochi",
    title="Mochi 1",
    classes=("MochiTransformer3DModel",),
    kind=MochiKind(),
    axes=("temporal", "reference", "reference"),
    rope_axes=RopeAxes(
        dims=mochi_axes_dims, theta=10000.0, theta_source="none: the frequencies are the learned pos_frequencies"
    ),
    trained=(
        TrainedGrid(
            (28,),
            "Mochi 1 preview: 5.4 s at 30 fps, 163 frames, at 480 x 848 px (MochiPipeline's default size), from the "
            "authors' README as remembered (genmo/mochi, not read here); MochiPipeline's VAE factor 6x temporal: "
            "(163 - 1) / 6 + 1 = 28 latent frames",
            pipeline_default=(4,),
        ),
    ),  # MochiPipeline's 19 frames: (19 - 1) / 6 + 1
    time=Timestep(0.0, "MochiPipeline's scheduler inverts its sigmas: it passes (1 - sigma) * 1000", at_clean=1000.0),
    rope_attr="rope",
    rope_classes=("MochiRoPE",),
    pipelines=("MochiPipeline",),
    test="test_families.py, test_mochi.py",
    methods=METHODS,
    methods_reason=(
        "its frequencies are learned (no theta for NTK, YaRN, DyPE or RIFLEx to change) and its y, x "
        "positions are scaled to a fixed area, so only methods moving its time positions apply"
    ),
)

FAMILIES = (MOCHI,)
