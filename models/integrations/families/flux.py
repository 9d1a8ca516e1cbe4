"""Families with an ids-based rope (FluxPosEmbed and its copies); see `rope_kinds/ids.py`.

Time: FluxPipeline passes the transformer timestep = sigma (t / 1000), which the transformer
multiplies by 1000 itself, so t = timestep. DyPE's pipeline also caps the schedule's shift
(`shift_cap.py`, the `shift_cap` option).
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.ids import IdsKind
from ..shift_cap import FluxShiftCap

FLUX = Family(
    name="flux",
    title="FLUX.1",
    classes=("FluxTransformer2DModel",),
    kind=IdsKind(image_ids="img_ids", text_ids="txt_ids"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="axes_dims_rope", theta=10000.0,
                       theta_source="FluxTransformer2DModel builds FluxPosEmbed(theta=10000)"),
    trained=(TrainedGrid(
        (64, 64),
        "FLUX.1 [dev]/[schnell]: 1024 x 1024 px (FluxPipeline's default, default_sample_size 128 x VAE 8); "
        "VAE 8x, 2x2 patches = 16 px per token; DyPE's Flux code uses the same base (1024 // 16 = 64)"),),
    time=Timestep(1.0, "FluxPipeline passes sigma"),
    rope_attr="pos_embed",
    rope_classes=("FluxPosEmbed",),
    pipelines=("FluxPipeline", "FluxImg2ImgPipeline", "FluxInpaintPipeline", "FluxControlNetPipeline",
               "FluxKontextPipeline", "FluxFillPipeline"),
    test="test_families.py, test_flux_shift_cap.py, test_call_state.py, test_context_parallel.py",
    extras=(FluxShiftCap(),),
)

# its ControlNet carries its own copy of the rope; patched with the transformer when a pipeline is passed
FLUX_CONTROLNET = replace(FLUX, name="flux-controlnet", title="FLUX.1 ControlNet", classes=("FluxControlNetModel",),
                          pipelines=("FluxControlNetPipeline",), extras=(),
                          test="test_families.py, test_pipelines.py")

FAMILIES = (FLUX, FLUX_CONTROLNET)
