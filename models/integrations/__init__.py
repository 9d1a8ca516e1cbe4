"""axialrope inside diffusers' own transformers.

- `axial_processor`: axial RoPE attention processors for diffusers' DiT-style models (`use_axial_rope`).
- `extrapolation`: `apply_extrapolation`, every extrapolation method on pretrained Flux, Qwen-Image,
  Wan, HunyuanVideo, CogVideoX and LTX-Video, one adapter per family in `families/`, their trained
  grids in `trained_grids`.
"""
