"""Family declarations, one module per rope kind's families; `FAMILIES` collects them all."""

from __future__ import annotations

from . import (
            anyflow,
            cogvideox,
            cosmos,
            flux,
            framepack,
            helios,
            hunyuan_video,
            joyimage,
            ltx2,
            ltx_video,
            mochi,
            qwen_image,
            sana_wm,
            wan,
)

FAMILIES = (*flux.FAMILIES, *qwen_image.FAMILIES, *wan.FAMILIES, *hunyuan_video.FAMILIES, *cogvideox.FAMILIES,
            *ltx_video.FAMILIES, *anyflow.FAMILIES, *framepack.FAMILIES,
            *mochi.FAMILIES, *cosmos.FAMILIES, *helios.FAMILIES, *sana_wm.FAMILIES,
            *joyimage.FAMILIES, *ltx2.FAMILIES)
