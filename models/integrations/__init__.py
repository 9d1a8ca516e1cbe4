"""axialrope inside diffusers' own models.

- `axial_processor`: axial RoPE attention processors for diffusers' DiT-style models (`use_axial_rope`).
- `extrapolation`: `apply_extrapolation`, every extrapolation method on the registered families.
- `registry`: the families (declared in `families/`, one module per rope kind's families, each a
  `family.Family`), and the docs' family table; `rope_kinds/`: one small module per kind of rope.
"""
