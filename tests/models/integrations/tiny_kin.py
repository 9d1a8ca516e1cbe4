"""Tiny configs of the families (EmbedND variants, Qwen kin, Z-Image and BriaFibo 2.0, Kandinsky),
built from the classes' own constructors; merged into tiny_families.TINY (a plain module: tests are
not a package). inputs(model, grid, timestep): the forward's keyword arguments for a token grid, the
timestep being t * the family's timestep at pure noise."""

from __future__ import annotations

import torch
from tiny_families import Tiny, generator, qwen_inputs, without_zero_init

TEXT = 4  # text tokens


# -- EmbedND variants -----------------------------------------------------------------------------------------


def make_hidream():
    from diffusers import HiDreamImageTransformer2DModel

    torch.manual_seed(0)
    return HiDreamImageTransformer2DModel(
        patch_size=2,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        caption_channels=[8, 8],
        text_emb_dim=8,
        num_routed_experts=2,
        num_activated_experts=1,
        axes_dims_rope=(4, 6, 6),
        max_resolution=(32, 32),
        llama_layers=[0, 1],
    ).eval()


def hidream_inputs(model, grid, timestep):
    """Square grids only: the model pads a non-square latent to max_resolution's tokens."""
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        timesteps=torch.tensor([float(timestep)]),
        encoder_hidden_states_t5=torch.randn(1, TEXT, 8, generator=g),
        encoder_hidden_states_llama3=torch.randn(2, 1, TEXT, 8, generator=g),
        pooled_embeds=torch.randn(1, 8, generator=g),
    )


def make_prx():
    from diffusers import PRXTransformer2DModel

    torch.manual_seed(0)
    return without_zero_init(
        PRXTransformer2DModel(  # zero-initialised layers filled
            in_channels=4,
            patch_size=2,
            context_in_dim=8,
            hidden_size=32,
            mlp_ratio=2.0,
            num_heads=2,
            depth=1,
            axes_dim=[8, 8],
            theta=1000,
        ).eval()
    )


def prx_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, TEXT, 8, generator=g),
    )


def make_ernie_image():
    from diffusers import ErnieImageTransformer2DModel

    torch.manual_seed(0)
    return without_zero_init(
        ErnieImageTransformer2DModel(  # zero-initialised output layers filled
            hidden_size=32,
            num_attention_heads=2,
            num_layers=1,
            ffn_hidden_size=16,
            in_channels=4,
            out_channels=4,
            patch_size=1,
            text_in_dim=8,
            rope_theta=256,
            rope_axes_dim=(4, 6, 6),
        ).eval()
    )


def ernie_image_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, h, w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        text_bth=torch.randn(1, TEXT, 8, generator=g),
        text_lens=torch.tensor([TEXT - 1]),
    )


# -- Qwen kin --------------------------------------------------------------------------------------------------


def make_nucleusmoe_image():
    from diffusers import NucleusMoEImageTransformer2DModel

    torch.manual_seed(0)
    return NucleusMoEImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        axes_dims_rope=(4, 6, 6),
        moe_enabled=False,
    ).eval()


LAYERS = 2  # Qwen-Image-Layered's generated layers beside its condition image (the pipeline makes layers + 1)


def make_qwen_layered():
    from diffusers import QwenImageTransformer2DModel

    torch.manual_seed(0)
    return QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        axes_dims_rope=(4, 6, 6),
        use_layer3d_rope=True,
    ).eval()


def qwen_layered_inputs(model, grid, timestep):
    """QwenImageLayeredPipeline's layout: layers + 1 generated images, then the condition image, all (h, w); an
    even text length (context parallelism splits it over two ranks)."""
    h, w = grid
    inputs = qwen_inputs(model, grid, timestep)
    inputs["hidden_states"] = torch.randn(1, (LAYERS + 2) * h * w, 16, generator=generator(4))
    inputs["encoder_hidden_states"] = torch.randn(1, TEXT, 16, generator=generator(5))
    inputs["encoder_hidden_states_mask"] = torch.ones(1, TEXT, dtype=torch.long)
    inputs["img_shapes"] = [[(1, h, w)] * (LAYERS + 2)]
    return inputs


TINY = {
    "hidream": Tiny(make_hidream, hidream_inputs, (4, 4)),
    "prx": Tiny(make_prx, prx_inputs, (4, 4)),
    "ernie-image": Tiny(make_ernie_image, ernie_image_inputs, (4, 4)),
    "nucleusmoe-image": Tiny(make_nucleusmoe_image, qwen_inputs, (4, 4)),
}
QWEN_LAYERED = Tiny(make_qwen_layered, qwen_layered_inputs, (4, 4))  # the qwen-image family's other rope
TINY["qwen-image-layered"] = QWEN_LAYERED  # no family of its own: for test_context_parallel.py


# -- Z-Image's RopeEmbedder and its copies ----------------------------------------------------------------------

Z_IMAGE = dict(all_patch_size=(2,), all_f_patch_size=(1,), dim=32, n_refiner_layers=1, n_heads=2, n_kv_heads=2)


def make_z_image():
    from diffusers import ZImageTransformer2DModel

    torch.manual_seed(0)
    return without_zero_init(
        ZImageTransformer2DModel(
            **Z_IMAGE,
            in_channels=4,
            n_layers=1,
            cap_feat_dim=8,
            rope_theta=256.0,
            axes_dims=[4, 6, 6],
            axes_lens=[64, 32, 32],
        ).eval()
    )


def z_image_inputs(model, grid, timestep):
    """ZImagePipeline's arguments: per sample a (C, 1, H, W) latent and its caption; `timestep` is its t
    argument (1 - sigma: the family's Timestep says so)."""
    h, w = grid
    g = generator()
    return dict(
        x=[torch.randn(4, 1, 2 * h, 2 * w, generator=g)],
        t=torch.tensor([float(timestep)]),
        cap_feats=[torch.randn(TEXT, 8, generator=g)],
    )


def make_z_image_controlnet():
    """A ControlNet sharing a tiny Z-Image's modules and RopeEmbedder, as ZImageControlNetPipeline makes it; the
    harness's `return_dict` is taken and its dict of block samples returned as a tuple (a subclass)."""
    from diffusers import ZImageControlNetModel

    class ZImageControlNet(ZImageControlNetModel):
        def forward(self, *args, return_dict=True, **kwargs):
            return tuple(super().forward(*args, **kwargs).values())

    torch.manual_seed(0)
    net = ZImageControlNet(**Z_IMAGE, control_layers_places=[0], control_refiner_layers_places=[0], control_in_dim=4)
    return without_zero_init(ZImageControlNet.from_transformer(net, make_z_image()).eval())


def z_image_controlnet_inputs(model, grid, timestep):
    inputs = z_image_inputs(model, grid, timestep)
    inputs["control_context"] = [torch.randn(inputs["x"][0].shape, generator=generator(1))]
    return inputs


def make_bria_fibo2():
    from diffusers import BriaFibo2Transformer2DModel

    torch.manual_seed(0)
    return without_zero_init(
        BriaFibo2Transformer2DModel(
            in_channels=4,
            patch_size=2,
            dim=32,
            n_layers=1,
            n_refiner_layers=1,
            n_heads=2,
            cap_feat_dim=8,
            injection_layer_ids=(0,),
            perceiver_num_layers=1,
            min_num_gist_tokens=2,
            max_num_gist_tokens=4,
            gist_step=2,
            gist_min_text_len=2,
            gist_max_text_len=8,
            rope_theta=256.0,
            axes_dims=(4, 6, 6),
            axes_lens=(64, 32, 32),
        ).eval()
    )


def bria_fibo2_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 2, TEXT, 8, generator=g),
    )


TINY.update(
    {
        "z-image": Tiny(make_z_image, z_image_inputs, (4, 4)),
        "z-image-controlnet": Tiny(make_z_image_controlnet, z_image_controlnet_inputs, (4, 4)),
        "bria-fibo2": Tiny(make_bria_fibo2, bria_fibo2_inputs, (4, 4)),
    }
)


# -- Qwen-Image 2.1 -----------------------------------------------------------------------------------------------


def make_qwen_image_21():
    from diffusers import QwenImage21Transformer2DModel

    torch.manual_seed(0)
    return without_zero_init(
        QwenImage21Transformer2DModel(
            in_channels=4,
            out_channels=4,
            num_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            context_in_dim=8,
            mlp_ratio=2,
            axes_dims_rope=(4, 6, 6),
        ).eval()
    )


def qwen_image_21_inputs(model, grid, timestep):
    """QwenImage21Pipeline's text-to-image layout: the text, then the generated image's slots (2 x 2 tokens
    each, so h * w a multiple of 4: the tiny trained grid is (5, 4))."""
    h, w = grid
    g = generator()
    slots = h * w // 4
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, TEXT, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        img_shapes=[[(1, h, w)]],
        img_mask=torch.tensor([[False] * TEXT + [True] * slots]),
    )


TINY.update({"qwen-image-2.1": Tiny(make_qwen_image_21, qwen_image_21_inputs, (5, 4))})


# -- Kandinsky 5 and 6 ------------------------------------------------------------------------------------------

KANDINSKY_SCALE = (1.0, 2.0, 2.0)  # the rope's scale_factor: the Kandinsky 5 pipeline's at 480p-like sizes


def make_kandinsky5():
    from diffusers import Kandinsky5Transformer3DModel

    torch.manual_seed(0)
    return without_zero_init(
        Kandinsky5Transformer3DModel(
            in_visual_dim=4,
            in_text_dim=8,
            in_text_dim2=8,
            time_dim=16,
            out_visual_dim=4,
            patch_size=(1, 2, 2),
            model_dim=32,
            ff_dim=32,
            num_text_blocks=1,
            num_visual_blocks=1,
            axes_dims=(4, 6, 6),
        ).eval()
    )


def kandinsky5_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, t, 2 * h, 2 * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, TEXT, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        pooled_projections=torch.randn(1, 8, generator=g),
        visual_rope_pos=[torch.arange(t), torch.arange(h), torch.arange(w)],
        text_rope_pos=torch.arange(TEXT),
        scale_factor=KANDINSKY_SCALE,
    )


def make_kandinsky6():
    from diffusers import Kandinsky6Transformer3DModel

    torch.manual_seed(0)
    return without_zero_init(
        Kandinsky6Transformer3DModel(
            in_visual_dim=4,
            out_visual_dim=4,
            in_text_dim=8,
            in_text_dim2=8,
            time_dim=16,
            patch_size=(1, 2, 2),
            model_dim=32,
            ff_dim=32,
            num_text_blocks=1,
            num_visual_blocks=1,
            axes_dims=(4, 6, 6),
            visual_cond=False,
            in_audio_dim=4,
            out_audio_dim=4,
            scale_factor=KANDINSKY_SCALE,
        ).eval()
    )


def kandinsky6_inputs(model, grid, timestep):
    """The video path (no audio latents); the rope's positions default to arange over each axis."""
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, t, 2 * h, 2 * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, TEXT, 8, generator=g),
        pooled_projections=torch.randn(1, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
    )


def make_kandinsky6_sr():
    from diffusers import Kandinsky6SRTransformer3DModel

    torch.manual_seed(0)
    return without_zero_init(
        Kandinsky6SRTransformer3DModel(
            in_visual_dim=4,
            out_visual_dim=4,
            time_dim=16,
            patch_size=(1, 1, 1),
            model_dim=32,
            ff_dim=32,
            num_visual_blocks=1,
            axes_dims=(4, 6, 6),
            nabla_window=(3, 3, 3),
            scale_factor=KANDINSKY_SCALE,
        ).eval()
    )


def kandinsky6_sr_inputs(model, grid, timestep):
    """Tiles of (noisy latent, anchor latent, anchor mask): 2 * 4 + 1 channels."""
    g = generator()
    return dict(hidden_states=torch.randn(1, *grid, 9, generator=g), timestep=torch.tensor([float(timestep)]))


TINY.update(
    {
        "kandinsky5": Tiny(make_kandinsky5, kandinsky5_inputs, (3, 4, 4)),
        "kandinsky6": Tiny(make_kandinsky6, kandinsky6_inputs, (3, 4, 4)),
        # NABLA attention: heights and widths in multiples of 8 tokens; flex attention runs eagerly here
        "kandinsky6-sr": Tiny(make_kandinsky6_sr, kandinsky6_sr_inputs, (2, 8, 8), inside=(1, 8, 8), slow=True),
    }
)
