"""Families with QwenEmbedRope; see `rope_kinds/qwen.py`.

Time: QwenImagePipeline passes timestep = sigma (t / 1000), so t = timestep; the dype-* methods
take DyPE's Qwen-Image conversion by default (`dype_variant`). Qwen-Image-Edit (Plus) appends its
reference images to `img_shapes`; they follow the kind's `reference` option.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.qwen_image import QwenKind
from ..ropes.qwen21 import Qwen21Kind

QWEN_IMAGE = Family(
    name="qwen-image",
    title="Qwen-Image",
    classes=("QwenImageTransformer2DModel",),
    kind=QwenKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="QwenImageTransformer2DModel builds QwenEmbedRope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "Qwen-Image-Layered: QwenImageLayeredPipeline takes resolution 640 (its default) or 1024 px, an area "
            "bucket "
            "for the input's aspect ratio; the larger, 1024 x 1024 px, is taken as trained (no model card read "
            "here, no "
            "network); VAE 8x, 2x2 patches = 16 px per token",
            pipeline_default=(40, 40),
            when=(("use_layer3d_rope", True),),
            label="Layered, use_layer3d_rope",
        ),
        TrainedGrid(
            (83, 83),
            "Qwen-Image model card: 1328 x 1328 px for 1:1 (its aspect-ratio table); VAE 8x, 2x2 patches = 16 px per "
            "token; DyPE's Qwen-Image code uses the same base (1328 // 16 = 83)",
            pipeline_default=(64, 64),
        ),
    ),  # QwenImagePipeline: default_sample_size 128 x VAE 8 = 1024 px
    time=Timestep(1.0, "QwenImagePipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("QwenEmbedRope", "QwenEmbedLayer3DRope"),
    pipelines=(
        "QwenImagePipeline",
        "QwenImageImg2ImgPipeline",
        "QwenImageInpaintPipeline",
        "QwenImageControlNetPipeline",
        "QwenImageEditPipeline",
        "QwenImageEditPlusPipeline",
        "QwenImageEditInpaintPipeline",
        "QwenImageLayeredPipeline",
    ),
    test="test_families.py, test_qwen_dype.py, test_reference_images.py, test_qwen_kin.py (Layered), "
    "test_context_parallel.py (Layered)",
)

QWEN_IMAGE_CONTROLNET = replace(
    QWEN_IMAGE,
    name="qwen-image-controlnet",
    title="Qwen-Image ControlNet",
    classes=("QwenImageControlNetModel",),
    pipelines=("QwenImageControlNetPipeline",),
    trained=QWEN_IMAGE.trained[-1:],
    rope_classes=("QwenEmbedRope",),
    test="test_families.py, test_pipelines.py",
)

NUCLEUSMOE_IMAGE = replace(
    QWEN_IMAGE,
    name="nucleusmoe-image",
    title="NucleusMoE-Image",
    classes=("NucleusMoEImageTransformer2DModel",),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="NucleusMoEImageTransformer2DModel builds NucleusMoEEmbedRope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "NucleusMoEImagePipeline's default 1024 x 1024 px (default_sample_size 128 x VAE 8; no model card read "
            "here, no network); VAE 8x, 2x2 patches = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "NucleusMoEImagePipeline passes the scheduler's timestep / num_train_timesteps (sigma)"),
    rope_classes=("NucleusMoEEmbedRope",),
    pipelines=("NucleusMoEImagePipeline",),
    test="test_families.py",
)

QWEN_IMAGE_21 = Family(
    name="qwen-image-2.1",
    title="Qwen-Image 2.1",
    classes=("QwenImage21Transformer2DModel",),
    kind=Qwen21Kind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="QwenImage21Transformer2DModel builds QwenImage21Rope(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "QwenImage21Pipeline's default output_resolution 1024 x 1024 px (no model card read here, no network); "
            "VAE 16x, patch 1 = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "QwenImage21Pipeline passes the scheduler's timestep / 1000 (sigma)"),
    rope_attr="pos_embed",
    rope_classes=("QwenImage21Rope",),
    pipelines=("QwenImage21Pipeline",),
    test="test_families.py, test_qwen_kin.py",
)

FAMILIES = (QWEN_IMAGE, QWEN_IMAGE_CONTROLNET, NUCLEUSMOE_IMAGE, QWEN_IMAGE_21)
