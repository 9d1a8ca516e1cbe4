"""axialrope inside diffusers' own transformers: attention processors and rope replacements."""
