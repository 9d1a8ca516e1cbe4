"""Family declarations, one module per rope kind's families; `FAMILIES` collects them all."""

from __future__ import annotations

from . import (
    anyflow,
    cogvideox,
    fitted,
    flux,
    framepack,
    hunyuan_video,
    ideogram4,
    ltx_video,
    lumina,
    pipeline_built,
    qwen_image,
    wan,
)

FAMILIES = (*flux.FAMILIES, *qwen_image.FAMILIES, *wan.FAMILIES, *hunyuan_video.FAMILIES, *cogvideox.FAMILIES,
            *ltx_video.FAMILIES, *anyflow.FAMILIES, *framepack.FAMILIES, *pipeline_built.FAMILIES,
            *fitted.FAMILIES, *lumina.FAMILIES, *ideogram4.FAMILIES)
