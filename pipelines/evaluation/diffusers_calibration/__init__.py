"""Calibration of diffusers' own pipelines (Flux, Qwen-Image, Wan, ...) against their own samples at the trained size.

`targets` (sizes, frames and method variants, checked), `cell_store` (finished cells on disk, for resuming),
`calibration` (the plan and the cells, shared among processes) and `result` (bands, calibration.json, .md, pictures).
"""
