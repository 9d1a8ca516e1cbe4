"""Family declarations, one module per rope kind's families; `FAMILIES` collects them all."""

from __future__ import annotations

from . import (
               anyflow,
               cogvideox,
               embed_nd,
               flux,
               framepack,
               hunyuan_video,
               kandinsky,
               ltx_video,
               qwen_image,
               wan,
               z_image,
)

FAMILIES = (*flux.FAMILIES, *qwen_image.FAMILIES, *wan.FAMILIES, *hunyuan_video.FAMILIES, *cogvideox.FAMILIES,
            *ltx_video.FAMILIES, *anyflow.FAMILIES, *framepack.FAMILIES,
            *embed_nd.FAMILIES, *z_image.FAMILIES, *kandinsky.FAMILIES)
