"""axialrope: rotary position embeddings for Diffusion Transformers.

coords = grid_coords(16, 32, 32)                       # (t, y, x) of 16384 tokens
rope = AxialRotaryEmbedding(axes_dims=(16, 24, 24))    # head_dim 64
cos, sin = rope(coords)                                # (16384, 32) each
q, k = apply_rotary_qk(q, k, cos, sin)                 # q, k: (batch, heads, 16384, 64)
q, k = rms_norm_rotary_qk(q, k, cos, sin, q_weight, k_weight)   # q/k RMSNorm, then RoPE, one pass
"""

from .attention import KVCache, RoPEAttention
from .coords import grid_coords, text_and_grid_coords
from .extrapolation import EXTRAPOLATION_METHODS, Extrapolation, RopePlan
from .frequencies import rope_frequencies
from .fused import rms_norm_rotary_qk
from .rotary import LAYOUTS, apply_rotary, apply_rotary_, apply_rotary_qk, rotary_backend
from .scaling import ROPE_TYPES, RopeScaling
from .tables import AxialRotaryEmbedding, RotaryEmbedding

__version__ = "0.1.0"

__all__ = [
    "AxialRotaryEmbedding",
    "EXTRAPOLATION_METHODS",
    "Extrapolation",
    "KVCache",
    "LAYOUTS",
    "ROPE_TYPES",
    "RoPEAttention",
    "RopePlan",
    "RopeScaling",
    "RotaryEmbedding",
    "apply_rotary",
    "apply_rotary_",
    "apply_rotary_qk",
    "grid_coords",
    "rms_norm_rotary_qk",
    "rope_frequencies",
    "rotary_backend",
    "text_and_grid_coords",
]
