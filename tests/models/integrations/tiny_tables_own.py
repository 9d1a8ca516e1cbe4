"""Tiny configs of the families whose pipeline builds the rope tables (ConsisID, ...) and of those
with their own ropes, built from the classes' own constructors; merged into tiny_families.TINY by
conftest.py. Each pipeline's table comes from the pipeline's own method where it has one."""

from __future__ import annotations

import types

import torch
from tiny_families import Tiny, generator, without_zero_init


def make_consisid():
    from diffusers import ConsisIDTransformer3DModel

    torch.manual_seed(0)
    return ConsisIDTransformer3DModel(
        num_attention_heads=1,
        attention_head_dim=64,
        in_channels=4,
        out_channels=4,
        time_embed_dim=4,
        text_embed_dim=8,
        num_layers=1,
        sample_width=8,
        sample_height=8,
        sample_frames=9,
        patch_size=2,
        max_text_seq_length=4,
        use_rotary_positional_embeddings=True,
        is_train_face=False,
    ).eval()


def consisid_table(model, grid):
    """ConsisIDPipeline._prepare_rotary_positional_embeddings, from diffusers' own functions (the pipeline's
    module needs OpenCV): the grid fitted into the transformer's sample size."""
    from diffusers.models.embeddings import get_3d_rotary_pos_embed
    from diffusers.pipelines.cogvideo.pipeline_cogvideox import get_resize_crop_region_for_grid

    t, h, w = grid
    config = model.config
    crops = get_resize_crop_region_for_grid(
        (h, w), config.sample_width // config.patch_size, config.sample_height // config.patch_size
    )
    return get_3d_rotary_pos_embed(config.attention_head_dim, crops, (h, w), t, device=torch.device("cpu"))


def consisid_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, t, 4, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 4, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        image_rotary_emb=consisid_table(model, grid),
    )


def make_hunyuan_dit():
    from diffusers import HunyuanDiT2DModel

    torch.manual_seed(0)
    return HunyuanDiT2DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        patch_size=2,
        hidden_size=32,
        num_layers=2,
        mlp_ratio=2.0,
        cross_attention_dim=8,
        cross_attention_dim_t5=8,
        pooled_projection_dim=4,
        text_len=3,
        text_len_t5=3,
        sample_size=8,
    ).eval()


def make_hunyuan_dit_controlnet():
    from diffusers import HunyuanDiT2DControlNetModel

    torch.manual_seed(0)
    return without_zero_init(
        HunyuanDiT2DControlNetModel(
            conditioning_channels=4,
            num_attention_heads=2,
            attention_head_dim=16,
            in_channels=4,
            patch_size=2,
            hidden_size=32,
            transformer_num_layers=4,
            mlp_ratio=2.0,
            cross_attention_dim=8,
            cross_attention_dim_t5=8,
            pooled_projection_dim=4,
            text_len=3,
            text_len_t5=3,
            sample_size=8,
        ).eval()
    )


def hunyuan_dit_table(model, grid):
    """HunyuanDiTPipeline's table: the grid fitted into its 512 px box, diffusers' own functions."""
    from diffusers.models.embeddings import get_2d_rotary_pos_embed
    from diffusers.pipelines.hunyuandit.pipeline_hunyuandit import get_resize_crop_region_for_grid

    crops = get_resize_crop_region_for_grid(tuple(grid), 512 // 8 // model.config.patch_size)
    return get_2d_rotary_pos_embed(model.config.attention_head_dim, crops, tuple(grid), device=torch.device("cpu"))


def hunyuan_dit_inputs(model, grid, timestep, controlnet=False):
    h, w = grid
    g = generator()
    inputs = dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        text_embedding_mask=torch.ones(1, 3),
        encoder_hidden_states_t5=torch.randn(1, 3, 8, generator=g),
        text_embedding_mask_t5=torch.ones(1, 3),
        image_meta_size=torch.tensor([[8.0 * 2 * h, 8.0 * 2 * w] * 3]),
        style=torch.tensor([0]),
        image_rotary_emb=hunyuan_dit_table(model, grid),
    )
    if controlnet:
        inputs["controlnet_cond"] = torch.randn(1, 4, 2 * h, 2 * w, generator=g)
    return inputs


def make_easyanimate():
    from diffusers import EasyAnimateTransformer3DModel

    torch.manual_seed(0)
    return EasyAnimateTransformer3DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        out_channels=4,
        patch_size=2,
        num_layers=1,
        mmdit_layers=1,
        time_embed_dim=8,
        text_embed_dim=8,
    ).eval()


def easyanimate_inputs(model, grid, timestep):
    """grid (frames, h, w) in tokens; the tiny trained grid (3, 4, 6) fills the rope's 30 x 45 token box."""
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
    )


def make_cogview4():
    """rope_axes_dim (8, 8): the tiny trained grid (4, 4) takes every second position."""
    from diffusers import CogView4Transformer2DModel

    torch.manual_seed(0)
    return CogView4Transformer2DModel(
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        text_embed_dim=8,
        time_embed_dim=8,
        condition_dim=4,
        rope_axes_dim=(8, 8),
    ).eval()


def cogview4_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    size = torch.tensor([[16.0 * h, 16.0 * w]])
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        original_size=size,
        target_size=size,
        crop_coords=torch.zeros(1, 2),
    )


def make_glm_image():
    from diffusers import GlmImageTransformer2DModel

    torch.manual_seed(0)
    return GlmImageTransformer2DModel(
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        text_embed_dim=8,
        time_embed_dim=8,
        condition_dim=4,
        prior_vq_quantizer_codebook_size=8,
    ).eval()


def glm_image_inputs(model, grid, timestep):
    """The prior's image tokens: one per token of the grid (the pipeline upsamples its own to the grid)."""
    h, w = grid
    g = generator()
    size = torch.tensor([[16.0 * h, 16.0 * w]])
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        prior_token_id=torch.randint(0, 8, (1, h * w), generator=g),
        prior_token_drop=torch.tensor([False]),
        timestep=torch.tensor([float(timestep)]),
        target_size=size,
        crop_coords=torch.zeros(1, 2),
    )


def make_lumina2():
    from diffusers import Lumina2Transformer2DModel

    torch.manual_seed(0)
    return Lumina2Transformer2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=4,
        hidden_size=32,
        num_layers=1,
        num_refiner_layers=1,
        num_attention_heads=2,
        num_kv_heads=1,
        multiple_of=8,
        axes_dim_rope=(4, 6, 6),
        axes_lens=(16, 32, 32),
        cap_feat_dim=8,
    ).eval()


def lumina2_inputs(model, grid, timestep):
    """Two captions of lengths 3 and 2 (the mask's sums), so caption and joint tables have padding rows."""
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(2, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.full((2,), float(timestep)),
        encoder_hidden_states=torch.randn(2, 3, 8, generator=g),
        encoder_attention_mask=torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool),
    )


def make_lumina_next():
    from diffusers import LuminaNextDiT2DModel

    torch.manual_seed(0)
    return LuminaNextDiT2DModel(
        sample_size=8,
        patch_size=2,
        in_channels=4,
        hidden_size=32,
        num_layers=1,
        num_attention_heads=2,
        num_kv_heads=1,
        multiple_of=8,
        cross_attention_dim=8,
    ).eval()


def lumina_next_inputs(model, grid, timestep):
    """LuminaPipeline's table for the step, cut to the grid (the transformer takes the grid's corner of its 384 x
    384): its scaling factor is the side ratio to sample_size * 8 px, PI-like before its watershed (1), NTK at it."""
    import math

    from diffusers.models.embeddings import get_2d_rotary_pos_embed_lumina

    h, w = grid
    g = generator()
    side = model.config.sample_size * 8
    factor = math.sqrt(16 * h * 16 * w / side**2)
    linear, ntk = (factor, 1.0) if timestep < 1.0 else (1.0, factor)
    table = get_2d_rotary_pos_embed_lumina(model.head_dim, h, w, linear_factor=linear, ntk_factor=ntk)
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        encoder_mask=torch.ones(1, 3),
        image_rotary_emb=table,
        cross_attention_kwargs={},
    )


def make_allegro():
    from diffusers import AllegroTransformer3DModel

    torch.manual_seed(0)
    return AllegroTransformer3DModel(
        patch_size=2,
        patch_size_t=1,
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=4,
        out_channels=4,
        num_layers=1,
        cross_attention_dim=24,
        caption_channels=8,
        sample_height=8,
        sample_width=8,
        sample_frames=3,
    ).eval()


def allegro_inputs(model, grid, timestep):
    """AllegroPipeline's tables and rows from its own method (VAE factor 8)."""
    from diffusers import AllegroPipeline

    t, h, w = grid
    g = generator()
    pipe = types.SimpleNamespace(vae_scale_factor_spatial=8, transformer=model)
    rope = AllegroPipeline._prepare_rotary_positional_embeddings(pipe, 1, 16 * h, 16 * w, t, torch.device("cpu"))
    return dict(
        hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        image_rotary_emb=rope,
    )


def make_ideogram4():
    """head_dim 24: 12 pairs, dealt t, y, x, t, y, x, ... by mrope_section (4, 4, 4)."""
    from diffusers import Ideogram4Transformer2DModel

    torch.manual_seed(0)
    return Ideogram4Transformer2DModel(
        in_channels=4,
        num_layers=1,
        attention_head_dim=24,
        num_attention_heads=2,
        intermediate_size=32,
        adaln_dim=8,
        llm_features_dim=8,
        rope_theta=10000,
        mrope_section=(4, 4, 4),
    ).eval()


def ideogram4_inputs(model, grid, timestep):
    """The packed [text][image] sequence with the pipeline's own ids (two prompts, 3 and 2 text tokens)."""
    from diffusers import Ideogram4Pipeline

    h, w = grid
    g = generator()
    position_ids, segment_ids, indicator = Ideogram4Pipeline._prepare_ids([3, 2], h, w, 3, torch.device("cpu"))
    length = 3 + h * w
    return dict(
        hidden_states=torch.randn(2, length, 4, generator=g),
        timestep=torch.full((2,), float(timestep)),
        encoder_hidden_states=torch.randn(2, length, 8, generator=g),
        position_ids=position_ids,
        segment_ids=segment_ids,
        indicator=indicator,
    )


TINY: dict[str, Tiny] = {
    "consisid": Tiny(make_consisid, consisid_inputs, (3, 4, 4)),
    "hunyuan-dit": Tiny(make_hunyuan_dit, hunyuan_dit_inputs, (4, 4)),
    "hunyuan-dit-controlnet": Tiny(
        make_hunyuan_dit_controlnet, lambda m, g, t: hunyuan_dit_inputs(m, g, t, controlnet=True), (4, 4)
    ),
    "easyanimate": Tiny(make_easyanimate, easyanimate_inputs, (3, 4, 6)),
    "cogview4": Tiny(make_cogview4, cogview4_inputs, (4, 4)),
    "glm-image": Tiny(make_glm_image, glm_image_inputs, (4, 4)),
    "lumina2": Tiny(make_lumina2, lumina2_inputs, (4, 4)),
    "lumina-next": Tiny(make_lumina_next, lumina_next_inputs, (4, 4)),
    "allegro": Tiny(make_allegro, allegro_inputs, (3, 4, 4)),
    "ideogram4": Tiny(make_ideogram4, ideogram4_inputs, (4, 4)),
}
