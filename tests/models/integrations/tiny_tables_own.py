"""Tiny configs of the families whose pipeline builds the rope tables (ConsisID, ...) and of those
with their own ropes, built from the classes' own constructors; merged into tiny_families.TINY by
conftest.py. Each pipeline's table comes from the pipeline's own method where it has one."""

from __future__ import annotations

import torch
from tiny_families import Tiny, generator


def make_consisid():
    from diffusers import ConsisIDTransformer3DModel

    torch.manual_seed(0)
    return ConsisIDTransformer3DModel(num_attention_heads=1, attention_head_dim=64, in_channels=4, out_channels=4,
                                      time_embed_dim=4, text_embed_dim=8, num_layers=1, sample_width=8,
                                      sample_height=8, sample_frames=9, patch_size=2, max_text_seq_length=4,
                                      use_rotary_positional_embeddings=True, is_train_face=False).eval()


def consisid_table(model, grid):
    """ConsisIDPipeline._prepare_rotary_positional_embeddings, from diffusers' own functions (the pipeline's
    module needs OpenCV): the grid fitted into the transformer's sample size."""
    from diffusers.models.embeddings import get_3d_rotary_pos_embed
    from diffusers.pipelines.cogvideo.pipeline_cogvideox import get_resize_crop_region_for_grid

    t, h, w = grid
    config = model.config
    crops = get_resize_crop_region_for_grid((h, w), config.sample_width // config.patch_size,
                                            config.sample_height // config.patch_size)
    return get_3d_rotary_pos_embed(config.attention_head_dim, crops, (h, w), t, device=torch.device("cpu"))


def consisid_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(hidden_states=torch.randn(1, t, 4, 2 * h, 2 * w, generator=g),
                encoder_hidden_states=torch.randn(1, 4, 8, generator=g), timestep=torch.tensor([float(timestep)]),
                image_rotary_emb=consisid_table(model, grid))


TINY: dict[str, Tiny] = {
    "consisid": Tiny(make_consisid, consisid_inputs, (3, 4, 4)),
}
