"""DiT models and a tiny text LM built on the axialrope core (installed as `axialrope.models`).

    from axialrope.models import RopeConfig, create_dit
    model = create_dit("S", sample_size=32, num_classes=10)            # image DiT, axial RoPE
    video = create_dit("S", sample_size=32, num_frames=16, temporal_patch_size=2)
    model.rope_config = RopeConfig(theta=10000.0, scaling={"rope_type": "ntk", "factor": 2.0})
"""

from .blocks import Attention, DiTBlock, FinalLayer
from .dit import POSITION_ENCODINGS, DiT, DiTOutput
from .diffusers_rope import AxialRopeAttnProcessor, use_axial_rope
from .embeddings import LabelEmbedder, Patchify, TimestepEmbedder
from .positions import GridRope, RopeConfig, sincos_pos_embed, split_axes
from .registry import DIT_SIZES, create_dit, dit_b, dit_mini, dit_s, dit_tiny, dit_xl
from .text_lm import TextLMConfig, TinyCausalLM

__all__ = [
    "Attention",
    "AxialRopeAttnProcessor",
    "DIT_SIZES",
    "DiT",
    "DiTBlock",
    "DiTOutput",
    "FinalLayer",
    "GridRope",
    "LabelEmbedder",
    "POSITION_ENCODINGS",
    "Patchify",
    "RopeConfig",
    "TextLMConfig",
    "TimestepEmbedder",
    "TinyCausalLM",
    "create_dit",
    "dit_b",
    "dit_s",
    "dit_mini",
    "dit_tiny",
    "dit_xl",
    "sincos_pos_embed",
    "split_axes",
    "use_axial_rope",
]
