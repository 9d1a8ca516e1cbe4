"""Family declarations, one module per rope kind's families; `FAMILIES` collects them all."""

from __future__ import annotations

from . import (
    anyflow,
    cogvideox,
    cosmos,
    cosmos3,
    embed_nd,
    fitted,
    flux,
    framepack,
    helios,
    hunyuan_video,
    ideogram4,
    joyimage,
    kandinsky,
    ltx2,
    ltx_video,
    lumina,
    mochi,
    pipeline_built,
    qwen_image,
    sana_wm,
    wan,
    z_image,
)

FAMILIES = (*flux.FAMILIES, *qwen_image.FAMILIES, *wan.FAMILIES, *hunyuan_video.FAMILIES, *cogvideox.FAMILIES,
            *ltx_video.FAMILIES, *anyflow.FAMILIES, *framepack.FAMILIES, *pipeline_built.FAMILIES,
            *fitted.FAMILIES, *lumina.FAMILIES, *ideogram4.FAMILIES, *mochi.FAMILIES, *cosmos.FAMILIES,
            *helios.FAMILIES, *sana_wm.FAMILIES, *joyimage.FAMILIES, *ltx2.FAMILIES, *embed_nd.FAMILIES,
            *z_image.FAMILIES, *kandinsky.FAMILIES, *cosmos3.FAMILIES)
