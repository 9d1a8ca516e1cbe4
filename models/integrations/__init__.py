"""axialrope inside diffusers' own models.

- `axial_processor`: axial RoPE attention processors for diffusers' DiT-style models (`use_axial_rope`).
- `extrapolation`: `apply_extrapolation`, every extrapolation method on the registered families.
- `registry`: the families (`FAMILIES`, each a `family.Family`); `family_table` the docs' table of them.
- `ropes/`: diffusers' ropes, a module each, with the families that use it (Flux's in `flux.py`, ...).
"""
