"""DiT models, a tiny text LM and diffusers integrations on the axialrope core (installed as `axialrope.models`).

    from axialrope.models import RopeConfig, create_dit
    model = create_dit("S", sample_size=32, num_classes=10)            # image DiT, axial RoPE
    video = create_dit("S", sample_size=32, num_frames=16, temporal_patch_size=2)
    model.rope_config = RopeConfig(theta=10000.0, scaling={"rope_type": "ntk", "factor": 2.0})

`axial_dit/` holds the DiT (model, blocks, input layers, position encodings, sizes, inflation),
`integrations/` what plugs axialrope into diffusers' own transformers (`apply_extrapolation` gives
every family of `integrations.registry.FAMILIES` the extrapolation methods: Flux, Qwen-Image, Wan,
HunyuanVideo, CogVideoX, LTX-Video and their kin; `docs/diffusers.md` lists them), `text_lm.py` the
text LM, `extrapolation_bands.py` the bands `auto` picks a method from (by scale and aspect) and
`calibration_file.py` a calibration.json read back.
"""

from .axial_dit.blocks import Attention, DiTBlock, FinalLayer
from .axial_dit.inflate import inflate_from_image, initialize_from
from .axial_dit.input_layers import LabelEmbedder, Patchify, TimestepEmbedder
from .axial_dit.model import POSITION_ENCODINGS, DiT, DiTOutput
from .axial_dit.position_encoding import GridRope, RopeConfig, sincos_pos_embed, split_axes
from .axial_dit.sizes import DIT_SIZES, create_dit, dit_b, dit_mini, dit_s, dit_tiny, dit_xl
from .integrations.axial_processor import AxialRopeAttnProcessor, use_axial_rope
from .integrations.extrapolation import ExtrapolationHandle, apply_extrapolation
from .text_lm import TextLMConfig, TinyCausalLM

__all__ = [
    "Attention",
    "AxialRopeAttnProcessor",
    "DIT_SIZES",
    "DiT",
    "DiTBlock",
    "DiTOutput",
    "ExtrapolationHandle",
    "FinalLayer",
    "GridRope",
    "LabelEmbedder",
    "POSITION_ENCODINGS",
    "Patchify",
    "RopeConfig",
    "TextLMConfig",
    "TimestepEmbedder",
    "TinyCausalLM",
    "apply_extrapolation",
    "create_dit",
    "dit_b",
    "dit_s",
    "dit_mini",
    "dit_tiny",
    "dit_xl",
    "inflate_from_image",
    "initialize_from",
    "sincos_pos_embed",
    "split_axes",
    "use_axial_rope",
]
