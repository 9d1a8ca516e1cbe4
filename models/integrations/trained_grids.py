"""The token grid each family was trained at, with where the numbers come from.

A grid is in transformer tokens: pixels / (VAE factor * patch) per spatial axis and
(frames - 1) / temporal VAE factor + 1 latent frames (divided by the temporal patch) in time.
`apply_extrapolation(..., trained_grid=None)` takes the entry for the transformer's variant;
pass `trained_grid` to override it (a fine-tune at another size, a 720p checkpoint).

The sizes are those of each model card as diffusers' pipelines default to them (the pipelines'
`height`, `width`, `num_frames` defaults, readable in the installed diffusers), and, where
the extrapolation papers' code names a base, that base (DyPE: Flux 1024 px, Qwen-Image
1328 px, both 16 px per token). They were not re-read from the model hub here (no network).
"""

from __future__ import annotations

from .families.base import TrainedGrid

TRAINED_GRIDS: dict[str, TrainedGrid] = {
    "flux": TrainedGrid(
        (64, 64),
        "FLUX.1 [dev]/[schnell]: 1024 x 1024 px (FluxPipeline's default, default_sample_size 128 x VAE 8); "
        "VAE 8x, 2x2 patches = 16 px per token; DyPE's Flux code uses the same base (1024 // 16 = 64)",
    ),
    "qwen-image": TrainedGrid(
        (83, 83),
        "Qwen-Image model card: 1328 x 1328 px for 1:1 (its aspect-ratio table); VAE 8x, 2x2 patches = "
        "16 px per token; DyPE's Qwen-Image code uses the same base (1328 // 16 = 83)",
    ),
    "wan-2.1": TrainedGrid(
        (21, 30, 52),
        "Wan 2.1 T2V/I2V (480P): 81 frames at 480 x 832 px (WanPipeline's defaults); VAE 8x spatial, 4x "
        "temporal ((81 - 1) / 4 + 1 = 21 latent frames), patch (1, 2, 2). The 14B models were also trained "
        "at 720 x 1280: pass trained_grid=(21, 45, 80) for those",
    ),
    "wan-2.2-ti2v": TrainedGrid(
        (31, 22, 40),
        "Wan 2.2 TI2V-5B model card: 121 frames at 704 x 1280 px (24 fps); Wan 2.2 VAE 16x spatial, 4x "
        "temporal ((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2) = 32 px per token",
    ),
    "hunyuan-video": TrainedGrid(
        (33, 45, 80),
        "HunyuanVideo: 129 frames at 720 x 1280 px (HunyuanVideoPipeline's defaults, about 5 s at 24 fps); "
        "VAE 8x spatial, 4x temporal ((129 - 1) / 4 + 1 = 33 latent frames), patch 2, temporal patch 1",
    ),
    "cogvideox": TrainedGrid(
        (13, 30, 45),
        "CogVideoX-5B (1.0): 49 frames (6 s at 8 fps) at 480 x 720 px; the transformer's own config says so "
        "(sample_frames 49, sample_height 60, sample_width 90 latent pixels); VAE 8x spatial, 4x temporal "
        "(13 latent frames), patch 2",
    ),
    "cogvideox-1.5": TrainedGrid(
        (11, 48, 85),
        "CogVideoX1.5-5B model card: 81 frames (5 s at 16 fps) at 768 x 1360 px; VAE 8x spatial, 4x temporal "
        "(21 latent frames, padded to 22 by CogVideoXPipeline), patch 2, temporal patch 2",
    ),
    "ltx-video": TrainedGrid(
        (21, 16, 22),
        "LTX-Video: 161 frames at 512 x 704 px (LTXPipeline's defaults, 25 fps); VAE 32x spatial, 8x temporal "
        "((161 - 1) / 8 + 1 = 21 latent frames), patch 1",
    ),
}
