"""Families whose pipeline builds the rope tables and passes them in, beside CogVideoX (`cogvideox.py`).

ConsisID's pipeline is CogVideoX 1.0's: `get_3d_rotary_pos_embed` over the transformer's sample
size (axes (t, y, x) of head_dim / 4, 3 head_dim / 8, 3 head_dim / 8, theta 10000), passed to every
step as `image_rotary_emb`; it has no temporal patch. Time: ConsisIDPipeline passes the
CogVideoX DPM scheduler's steps 0 .. 999.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import TrainedGrid
from .cogvideox import COGVIDEOX

CONSISID = replace(
    COGVIDEOX, name="consisid", title="ConsisID", classes=("ConsisIDTransformer3DModel",),
    trained=(TrainedGrid(
        (13, 30, 45),
        "ConsisIDPipeline's defaults, 49 frames at 480 x 720 px, which are the transformer's own config (sample_frames "
        "49, sample_height 60, sample_width 90 latent pixels) as for CogVideoX-5B it is built on; VAE 8x spatial, 4x "
        "temporal (13 latent frames), patch 2; the model card was not read"),),
    riflex=(), pipelines=("ConsisIDPipeline",), test="test_families.py")

FAMILIES = (CONSISID,)
