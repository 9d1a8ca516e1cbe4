"""Families with an ids-based rope (FluxPosEmbed and its copies); see `rope_kinds/ids.py`.

Time: FluxPipeline passes the transformer timestep = sigma (t / 1000), which the transformer
multiplies by 1000 itself, so t = timestep. DyPE's pipeline also caps the schedule's shift
(`shift_cap.py`, the `shift_cap` option); the copies below keep their pipelines' own schedules.
Reference images (Kontext, Flux.2, BriaFibo-Edit, LongCat-Image-Edit) follow the kind's
`reference` option.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.flux import IdsKind
from ..shift_cap import FluxShiftCap

FLUX = Family(
    name="flux",
    title="FLUX.1",
    classes=("FluxTransformer2DModel",),
    kind=IdsKind(image_ids="img_ids", text_ids="txt_ids"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope", theta=10000.0, theta_source="FluxTransformer2DModel builds FluxPosEmbed(theta=10000)"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "FLUX.1 [dev]/[schnell]: 1024 x 1024 px (FluxPipeline's default, default_sample_size 128 x VAE 8); "
            "VAE 8x, 2x2 patches = 16 px per token; DyPE's Flux code uses the same base (1024 // 16 = 64)",
        ),
    ),
    time=Timestep(1.0, "FluxPipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("FluxPosEmbed",),
    pipelines=(
        "FluxPipeline",
        "FluxImg2ImgPipeline",
        "FluxInpaintPipeline",
        "FluxControlNetPipeline",
        "FluxKontextPipeline",
        "FluxKontextInpaintPipeline",
        "FluxFillPipeline",
    ),
    test="test_families.py, test_flux_shift_cap.py, test_call_state.py, test_context_parallel.py, "
    "test_reference_images.py",
    extras=(FluxShiftCap(),),
)

# its ControlNet carries its own copy of the rope; patched with the transformer when a pipeline is passed
FLUX_CONTROLNET = replace(
    FLUX,
    name="flux-controlnet",
    title="FLUX.1 ControlNet",
    classes=("FluxControlNetModel",),
    pipelines=("FluxControlNetPipeline",),
    extras=(),
    test="test_families.py, test_pipelines.py",
)


# -- copies of FluxPosEmbed (fluxkin) ------------------------------------------------------------------------

SIXTEEN_PX = "VAE 8x, 2x2 patches = 16 px per token"
SIGMA = "its pipeline passes sigma (the scheduler's timestep / 1000)"


def _default_1024(pipeline: str, why: str, tokens: str = SIXTEEN_PX) -> str:
    return (
        f"{pipeline}'s default 1024 x 1024 px ({why}; no model card read here, no network); {tokens}; "
        "a model trained larger passes its own trained_grid"
    )


def _constant_theta(model: str, rope: str) -> RopeAxes:
    return RopeAxes(dims="axes_dims_rope", theta=10000.0, theta_source=f"{model} builds {rope}(theta=10000)")


def _config_theta(model: str) -> RopeAxes:
    return RopeAxes(dims="axes_dims_rope", theta="rope_theta", theta_source=f"{model}'s config rope_theta")


CHROMA = replace(
    FLUX,
    name="chroma",
    title="Chroma",
    classes=("ChromaTransformer2DModel",),
    rope_axes=_constant_theta("ChromaTransformer2DModel", "FluxPosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("ChromaPipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    test="test_families.py",
    pipelines=("ChromaPipeline", "ChromaImg2ImgPipeline", "ChromaInpaintPipeline"),
)

LONGCAT_IMAGE = replace(  # text on the diagonal of (y, x) at 0 .. L - 1 on modality 0; the image on modality 1 after it
    FLUX,
    name="longcat-image",
    title="LongCat-Image",
    classes=("LongCatImageTransformer2DModel",),
    kind=IdsKind(output_index=1.0),
    rope_classes=("LongCatImagePosEmbed",),
    rope_axes=_constant_theta("LongCatImageTransformer2DModel", "LongCatImagePosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("LongCatImagePipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    test="test_families.py",
    pipelines=("LongCatImagePipeline", "LongCatImageEditPipeline"),
)

OVIS_IMAGE = replace(
    FLUX,
    name="ovis-image",
    title="Ovis-Image",
    classes=("OvisImageTransformer2DModel",),
    rope_classes=("OvisImagePosEmbed",),
    rope_axes=_constant_theta("OvisImageTransformer2DModel", "OvisImagePosEmbed"),
    trained=(TrainedGrid((64, 64), _default_1024("OvisImagePipeline", "default_sample_size 128 x VAE 8")),),
    time=Timestep(1.0, SIGMA),
    extras=(),
    test="test_families.py",
    pipelines=("OvisImagePipeline",),
)

KREA2 = replace(  # one `position_ids` argument: the text's rows (all 0) and the image's
    FLUX,
    name="krea2",
    title="Krea 2",
    classes=("Krea2Transformer2DModel",),
    kind=IdsKind(image_ids="position_ids", text_ids=None),
    rope_attr="rotary_emb",
    rope_classes=("Krea2RotaryPosEmbed",),
    rope_axes=_config_theta("Krea2Transformer2DModel"),
    trained=(
        TrainedGrid(
            (64, 64),
            _default_1024("Krea2Pipeline", "height=width=1024", "Qwen-Image VAE 8x, 2x2 patches = 16 px per token"),
        ),
    ),
    time=Timestep(1.0, "Krea2Pipeline passes the scheduler's timestep / num_train_timesteps (sigma)"),
    extras=(),
    test="test_families.py",
    pipelines=("Krea2Pipeline",),
)

BRIA = replace(
    FLUX,
    name="bria",
    title="Bria 3.2",
    classes=("BriaTransformer2DModel",),
    rope_classes=("BriaEmbedND",),
    rope_axes=_config_theta("BriaTransformer2DModel"),
    trained=(TrainedGrid((64, 64), _default_1024("BriaPipeline", "default_sample_size 64 x vae_scale_factor 16")),),
    time=Timestep(1000.0, "BriaPipeline passes the scheduler's timesteps (1000 at pure noise)"),
    extras=(),
    test="test_families.py",
    pipelines=("BriaPipeline",),
)

BRIA_FIBO = replace(  # BriaFiboEditPipeline: each reference at its own size on index 1, 2, ...
    FLUX,
    name="bria-fibo",
    title="BriaFibo",
    classes=("BriaFiboTransformer2DModel",),
    rope_classes=("BriaFiboEmbedND",),
    rope_axes=_config_theta("BriaFiboTransformer2DModel"),
    trained=(
        TrainedGrid(
            (64, 64),
            _default_1024(
                "BriaFiboPipeline", "default_sample_size 64 x VAE 16", "Wan 2.2 VAE 16x, no patching = 16 px per token"
            ),
        ),
    ),
    time=Timestep(1000.0, "BriaFiboPipeline passes the scheduler's timesteps (1000 at pure noise)"),
    extras=(),
    test="test_families.py",
    pipelines=("BriaFiboPipeline", "BriaFiboEditPipeline"),
)

# -- Flux.2 and Flux3: four axes (t, h, w, l), the text on l, the rope called once per ids argument ------------

FLUX2 = Family(
    name="flux2",
    title="FLUX.2",
    classes=("Flux2Transformer2DModel",),
    kind=IdsKind(separate_calls=("img_ids", "txt_ids")),  # references on t = 10, 20, ... (Flux2Pipeline)
    axes=("reference", "spatial", "spatial", "reference"),
    rope_axes=_config_theta("Flux2Transformer2DModel"),
    trained=(
        TrainedGrid(
            (128, 128),
            "Black Forest Labs' FLUX.2 announcement, as quoted by ComfyUI's FLUX.2 [dev] page (found by search; "
            "the model "
            "card itself was not read): output up to 4 MP, i.e. 2048 x 2048 px; VAE 8x, 2x2 patches = 16 px per token. "
            "Flux2Pipeline samples 1024 x 1024 px by default. FLUX.2 [klein] shares the class and is assumed the same",
            pipeline_default=(64, 64),
        ),
    ),
    time=Timestep(1.0, "Flux2Pipeline passes sigma (the scheduler's timestep / 1000)"),
    rope_attr="pos_embed",
    rope_classes=("Flux2PosEmbed",),
    pipelines=("Flux2Pipeline", "Flux2KleinPipeline", "Flux2KleinInpaintPipeline", "Flux2KleinKVPipeline"),
    test="test_families.py, test_reference_images.py, test_context_parallel.py",
)

FLUX3 = replace(
    FLUX2,
    name="flux3",
    title="FLUX.3",
    classes=("Flux3Transformer2DModel",),
    # references apart in `image_cond_ids`, at l = -1, -2, ...; h and w scaled by image_rope_scale 0.5
    kind=IdsKind(
        reference_ids="image_cond_ids",
        separate_calls=("txt_ids", "img_ids", "image_cond_ids"),
        index_axis=3,
        spacing=0.5,
    ),
    rope_axes=_config_theta("Flux3Transformer2DModel"),
    rope_classes=("Flux3PosEmbed",),
    trained=(TrainedGrid((64, 64), _default_1024("Flux3PrepareLatentsStep", "the modular pipeline's block")),),
    time=Timestep(1.0, "Flux3's modular denoise step passes the scheduler's timestep / 1000 (sigma)"),
    pipelines=(),
    test="test_families.py, test_reference_images.py",
)

FAMILIES = (FLUX, FLUX_CONTROLNET, CHROMA, LONGCAT_IMAGE, OVIS_IMAGE, KREA2, BRIA, BRIA_FIBO, FLUX2, FLUX3)
