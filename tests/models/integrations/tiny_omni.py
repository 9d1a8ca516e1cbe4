"""Tiny config of Cosmos 3 (Cosmos3OmniTransformer), merged into tiny_families.TINY.

Built from its own constructor (seeded, eval mode, milliseconds on the CPU); its inputs are the
pipeline's packing of a text-to-video call (text, then the vision grid after the modality margin,
position ids from the pipeline's own helpers, every frame noisy); no sound or action stream. A
plain module (tests are not a package).
"""

from __future__ import annotations

import torch

COSMOS3_TEXT = 5  # prompt tokens


def make_cosmos3():
    """head_dim 16: 8 pairs, dealt t, y, x, t, y, x, t, t by rope_axes_dim (4, 2, 2)."""
    from diffusers import Cosmos3OmniTransformer

    torch.manual_seed(0)
    return Cosmos3OmniTransformer(
        head_dim=16,
        hidden_size=32,
        intermediate_size=32,
        latent_channel=4,
        latent_patch_size=2,
        num_attention_heads=2,
        num_hidden_layers=1,
        num_key_value_heads=1,
        patch_latent_dim=16,
        rope_theta=10000.0,
        vocab_size=32,
        rope_axes_dim=(4, 2, 2),
    ).eval()


def cosmos3_inputs(model, grid, timestep, fps=24.0):
    """Text then a (t, h, w) vision grid, packed as Cosmos3OmniPipeline packs them (its default 24 fps)."""
    from diffusers.pipelines.cosmos.pipeline_cosmos3_omni import (
        get_3d_mrope_ids_text_tokens,
        get_3d_mrope_ids_vae_tokens,
    )

    config, (t, h, w), text = model.config, grid, COSMOS3_TEXT
    text_ids, after = get_3d_mrope_ids_text_tokens(num_tokens=text, temporal_offset=0, use_float_positions=True)
    vision_ids, _ = get_3d_mrope_ids_vae_tokens(
        t,
        h,
        w,
        after + config.unified_3d_mrope_temporal_modality_margin,
        fps=fps,
        base_fps=float(config.base_fps),
        temporal_compression_factor=4,
    )
    g, tokens = torch.Generator().manual_seed(0), t * h * w
    vision = torch.arange(text, text + tokens)
    return dict(
        input_ids=torch.randint(0, config.vocab_size, (text,), generator=g),
        text_indexes=torch.arange(text),
        position_ids=torch.cat([text_ids, vision_ids], dim=1),
        und_len=text,
        sequence_length=text + tokens,
        vision_tokens=[torch.randn(1, 4, t, 2 * h, 2 * w, generator=g)],
        vision_token_shapes=[(t, h, w)],
        vision_sequence_indexes=vision,
        vision_mse_loss_indexes=vision,
        vision_timesteps=torch.full((tokens,), float(timestep)),
        vision_noisy_frame_indexes=[torch.arange(t)],
    )


def tiny_configs(Tiny) -> dict:
    return {"cosmos3": Tiny(make_cosmos3, cosmos3_inputs, (3, 4, 4))}
