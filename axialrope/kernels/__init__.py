"""The rotation kernels behind `apply_rotary` and `rms_norm_rotary_qk`, and the choice between them.

`backends` picks a kernel per call; `eager` and `fused_eager` are the CPU/GPU kernels without
temporaries (and the plain formula); `compiling` decides when an inductor-compiled kernel pays
for its compile; `triton_rope` and `triton_norm_rope` are the CUDA kernels (Triton, imported lazily).
"""
