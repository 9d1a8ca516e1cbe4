"""Families with QwenEmbedRope; see `rope_kinds/qwen.py`.

Time: QwenImagePipeline passes timestep = sigma (t / 1000), so t = timestep; the dype-* methods
take DyPE's Qwen-Image conversion by default (`dype_variant`).
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.qwen import QwenKind

QWEN_IMAGE = Family(
    name="qwen-image",
    title="Qwen-Image",
    classes=("QwenImageTransformer2DModel",),
    kind=QwenKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="axes_dims_rope", theta=10000.0,
                       theta_source="QwenImageTransformer2DModel builds QwenEmbedRope(theta=10000)"),
    trained=(TrainedGrid(
        (83, 83),
        "Qwen-Image model card: 1328 x 1328 px for 1:1 (its aspect-ratio table); VAE 8x, 2x2 patches = 16 px per "
        "token; DyPE's Qwen-Image code uses the same base (1328 // 16 = 83)",
        pipeline_default=(64, 64)),),  # QwenImagePipeline: default_sample_size 128 x VAE 8 = 1024 px
    time=Timestep(1.0, "QwenImagePipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("QwenEmbedRope",),
    pipelines=("QwenImagePipeline", "QwenImageImg2ImgPipeline", "QwenImageInpaintPipeline",
               "QwenImageControlNetPipeline"),
    test="test_families.py, test_qwen_dype.py",
)

QWEN_IMAGE_CONTROLNET = replace(QWEN_IMAGE, name="qwen-image-controlnet", title="Qwen-Image ControlNet",
                                classes=("QwenImageControlNetModel",), pipelines=("QwenImageControlNetPipeline",),
                                test="test_families.py, test_pipelines.py")

FAMILIES = (QWEN_IMAGE, QWEN_IMAGE_CONTROLNET)
