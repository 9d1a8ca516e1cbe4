"""Tiny random configs of the registered families, built from the classes' own constructors.

`TINY[family name]` is a `Tiny`: `make()` builds the model (seeded, eval mode, milliseconds on the
CPU) and `inputs(model, grid, timestep)` gives its forward keyword arguments for a token grid.
Adding a family to the test harness (test_families.py) is one entry here. Loaded by conftest.py
and by the context-parallel worker (a plain module: tests are not a package).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tiny:
    """make(): the model. inputs(model, grid, timestep): forward kwargs. trained: the tiny trained grid.
    inside: a grid inside it (default: one token less per axis; Kandinsky 6 SR takes multiples of 8 only);
    slow: its harness tests run with -m slow (a model whose attention is slow on the CPU)."""

    make: Callable
    inputs: Callable
    trained: tuple[int, ...]
    inside: tuple[int, ...] | None = None
    slow: bool = False


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def flux_ids(h: int, w: int, text: int = 0) -> torch.Tensor:
    """Flux's ids: text rows at 0, then the (y, x) grid (axis 0 = 0)."""
    ids = torch.zeros(h, w, 3)
    ids[..., 1] = torch.arange(h)[:, None]
    ids[..., 2] = torch.arange(w)[None, :]
    return torch.cat([torch.zeros(text, 3), ids.reshape(-1, 3)])


def run(model, tiny: Tiny, grid, timestep) -> torch.Tensor:
    """The model's output on a grid, every output tensor flattened into one."""
    with torch.no_grad():
        output = model(**tiny.inputs(model, grid, timestep), return_dict=False)
    flat = []

    def collect(value):
        if torch.is_tensor(value):
            flat.append(value.flatten())
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    collect(output)
    return torch.cat(flat)


# -- FluxPosEmbed kind ------------------------------------------------------------------------------------------


def make_flux(head_dim=16, axes=(4, 6, 6), heads=2):
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    return FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=head_dim,
        num_attention_heads=heads,
        joint_attention_dim=8,
        pooled_projection_dim=8,
        axes_dims_rope=axes,
    ).eval()


FLUX_TEXT = 4  # text tokens (an even count: context parallelism splits them over two ranks)


def flux_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, FLUX_TEXT, 8, generator=g),
        pooled_projections=torch.randn(1, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        img_ids=flux_ids(h, w),
        txt_ids=torch.zeros(FLUX_TEXT, 3),
    )


def without_zero_init(model):
    """ControlNets start with zero output layers (their output would not depend on the rope): fill them."""
    with torch.no_grad():
        for parameter in model.parameters():
            if not parameter.any():
                parameter.normal_(std=0.1, generator=generator(2))
    return model


def make_flux_controlnet():
    from diffusers import FluxControlNetModel

    torch.manual_seed(0)
    return without_zero_init(
        FluxControlNetModel(
            patch_size=1,
            in_channels=4,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=8,
            pooled_projection_dim=8,
            axes_dims_rope=(4, 6, 6),
        ).eval()
    )


def flux_controlnet_inputs(model, grid, timestep):
    inputs = flux_inputs(model, grid, timestep)
    inputs["controlnet_cond"] = torch.randn(inputs["hidden_states"].shape, generator=generator(1))
    return inputs


# -- QwenEmbedRope kind -----------------------------------------------------------------------------------------


def make_qwen():
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
    ).eval()


def qwen_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, h * w, 16, generator=g),
        encoder_hidden_states=torch.randn(1, 5, 16, generator=g),
        encoder_hidden_states_mask=torch.ones(1, 5, dtype=torch.long),
        timestep=torch.tensor([float(timestep)]),
        img_shapes=[[(1, h, w)]],
    )


def make_qwen_controlnet():
    from diffusers import QwenImageControlNetModel

    torch.manual_seed(0)
    return without_zero_init(
        QwenImageControlNetModel(
            patch_size=2,
            in_channels=16,
            out_channels=4,
            num_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=16,
            axes_dims_rope=(4, 6, 6),
        ).eval()
    )


def qwen_controlnet_inputs(model, grid, timestep):
    inputs = qwen_inputs(model, grid, timestep)
    inputs["controlnet_cond"] = torch.randn(inputs["hidden_states"].shape, generator=generator(1))
    return inputs


# -- grid kind ------------------------------------------------------------------------------------------------


def make_wan(head_dim=12):
    from diffusers import WanTransformer3DModel

    torch.manual_seed(0)
    return WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=head_dim,
        in_channels=4,
        out_channels=4,
        text_dim=8,
        freq_dim=8,
        ffn_dim=8,
        num_layers=1,
        rope_max_seq_len=64,
    ).eval()


def wan_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
    )


def make_hunyuan():
    from diffusers import HunyuanVideoTransformer3DModel

    torch.manual_seed(0)
    return HunyuanVideoTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=1,
        attention_head_dim=32,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=1,
        patch_size_t=1,
        text_embed_dim=16,
        pooled_projection_dim=8,
        rope_axes_dim=(16, 8, 8),
    ).eval()


def hunyuan_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, h, w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
        encoder_attention_mask=torch.ones(1, 3, dtype=torch.long),
        pooled_projections=torch.randn(1, 8, generator=g),
        guidance=torch.tensor([3.0]),
    )


# -- pipeline tables kind -------------------------------------------------------------------------------------


def make_cogvideox():
    from diffusers import CogVideoXTransformer3DModel

    torch.manual_seed(0)
    return CogVideoXTransformer3DModel(
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
        temporal_compression_ratio=4,
        max_text_seq_length=4,
        use_rotary_positional_embeddings=True,
    ).eval()


def cogvideox_pipeline_table(model, grid):
    """The table CogVideoXPipeline passes, from its own method (VAE factor 8)."""
    from diffusers import CogVideoXPipeline

    t, h, w = grid
    pipe = types.SimpleNamespace(vae_scale_factor_spatial=8, transformer=model)
    p = model.config.patch_size
    return CogVideoXPipeline._prepare_rotary_positional_embeddings(pipe, 8 * p * h, 8 * p * w, t, torch.device("cpu"))


def cogvideox_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, t, 4, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 4, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        image_rotary_emb=cogvideox_pipeline_table(model, grid),
    )


# -- LTX-Video kind -------------------------------------------------------------------------------------------

LTX_SCALE = (8 / 25, 32, 32)  # LTXPipeline's rope_interpolation_scale at 25 fps


def make_ltx():
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    return LTXVideoTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=16,
        cross_attention_dim=32,
        num_layers=1,
        caption_channels=8,
    ).eval()


def ltx_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, t * h * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_attention_mask=torch.ones(1, 3, dtype=torch.long),
        num_frames=t,
        height=h,
        width=w,
        rope_interpolation_scale=LTX_SCALE,
    )


TINY: dict[str, Tiny] = {
    "flux": Tiny(make_flux, flux_inputs, (4, 4)),
    "flux-controlnet": Tiny(make_flux_controlnet, flux_controlnet_inputs, (4, 4)),
    "qwen-image": Tiny(make_qwen, qwen_inputs, (4, 4)),
    "qwen-image-controlnet": Tiny(make_qwen_controlnet, qwen_controlnet_inputs, (4, 4)),
    "wan": Tiny(make_wan, wan_inputs, (3, 4, 4)),
    "hunyuan-video": Tiny(make_hunyuan, hunyuan_inputs, (3, 4, 4)),
    "cogvideox": Tiny(make_cogvideox, cogvideox_inputs, (3, 4, 4)),
    "ltx-video": Tiny(make_ltx, ltx_inputs, (3, 4, 4)),
}


# -- fluxkin: the copies of FluxPosEmbed, Flux.2 and Flux3 -----------------------------------------------------


def make_flux_copy(class_name: str, **extra):
    """A tiny model of a FluxPosEmbed copy with Flux's constructor arguments (those it takes) and `extra`."""
    import diffusers

    cls = getattr(diffusers, class_name)
    arguments = dict(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=8,
        axes_dims_rope=(4, 6, 6),
        **extra,
    )
    torch.manual_seed(0)
    return cls(**arguments).eval()


def flux_copy_inputs(**extra_inputs):
    """Inputs of a FluxPosEmbed copy: Flux's, without pooled projections, with `extra_inputs`."""

    def inputs(model, grid, timestep):
        values = flux_inputs(model, grid, timestep)
        del values["pooled_projections"]
        values.update({key: make(model) for key, make in extra_inputs.items()})
        return values

    return inputs


LONGCAT_TEXT = 4


def longcat_inputs(model, grid, timestep):
    """LongCatImagePipeline's ids: text on modality 0 at (i, i); the image on modality 1 from (text, text)."""
    h, w = grid
    g = generator()
    text = torch.zeros(LONGCAT_TEXT, 3)
    text[:, 1] = text[:, 2] = torch.arange(LONGCAT_TEXT)
    image = flux_ids(h, w) + torch.tensor([1.0, LONGCAT_TEXT, LONGCAT_TEXT])
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, LONGCAT_TEXT, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        img_ids=image,
        txt_ids=text,
    )


def bria_fibo_text_layers(model):
    """BriaFibo's `text_encoder_layers`: the text encoder's hidden states the blocks read, one per block."""
    return [torch.randn(1, FLUX_TEXT, 8, generator=generator(3)) for _ in range(2)]


def make_krea2():
    from diffusers import Krea2Transformer2DModel

    torch.manual_seed(0)
    return Krea2Transformer2DModel(
        in_channels=4,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=16,
        timestep_embed_dim=8,
        text_hidden_dim=8,
        num_text_layers=2,
        text_num_attention_heads=2,
        text_num_key_value_heads=1,
        text_intermediate_size=8,
        num_layerwise_text_blocks=1,
        num_refiner_text_blocks=1,
        axes_dims_rope=(4, 6, 6),
        rope_theta=1000.0,
    ).eval()


def krea2_inputs(model, grid, timestep):
    """Krea2Pipeline.prepare_position_ids: the text's rows at 0, then the (0, y, x) grid."""
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=torch.randn(1, FLUX_TEXT, 2, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        position_ids=flux_ids(h, w, text=FLUX_TEXT),
    )


def make_flux2():
    from diffusers import Flux2Transformer2DModel

    torch.manual_seed(0)
    return Flux2Transformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=8,
        timestep_guidance_channels=8,
        axes_dims_rope=(4, 4, 4, 4),
        rope_theta=2000,
        guidance_embeds=False,
    ).eval()


def flux2_inputs(model, grid, timestep):
    """Flux2Pipeline's inputs, its ids from its own methods: int64 (1, seq, 4), as its context-parallel plan
    expects."""
    from diffusers import Flux2Pipeline

    h, w = grid
    g = generator()
    text = torch.randn(1, FLUX_TEXT, 8, generator=g)
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=text,
        timestep=torch.tensor([float(timestep)]),
        img_ids=Flux2Pipeline._prepare_latent_ids(torch.empty(1, 4, h, w)),
        txt_ids=Flux2Pipeline._prepare_text_ids(text),
    )


def make_flux3():
    from diffusers import Flux3Transformer2DModel

    torch.manual_seed(0)
    return Flux3Transformer2DModel(
        in_channels=4,
        cond_in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=8,
        timestep_channels=8,
        axes_dims_rope=(4, 4, 4, 4),
    ).eval()


FLUX3_ROPE_SCALE = 0.5  # Flux3PrepareLatentsStep's image_rope_scale


def flux3_ids(h: int, w: int, layer: int = 0) -> torch.Tensor:
    """The ids of Flux3's modular pipeline, from its own function: (0, y / 2, x / 2, layer), references at
    layer -1, -2, ..."""
    from diffusers.modular_pipelines.flux3.before_denoise import _prepare_image_ids

    return _prepare_image_ids(h, w, FLUX3_ROPE_SCALE, l_coord=layer)


def flux3_inputs(model, grid, timestep):
    from diffusers.modular_pipelines.flux3.before_denoise import Flux3TextRoPEInputsStep

    h, w = grid
    g = generator()
    text = torch.randn(1, FLUX_TEXT, 8, generator=g)
    return dict(
        hidden_states=torch.randn(1, h * w, 4, generator=g),
        encoder_hidden_states=text,
        timestep=torch.tensor([float(timestep)]),
        img_ids=flux3_ids(h, w),
        txt_ids=Flux3TextRoPEInputsStep._prepare_text_ids(text),
    )


TINY.update(
    {
        "chroma": Tiny(
            lambda: make_flux_copy(
                "ChromaTransformer2DModel",
                approximator_num_channels=8,
                approximator_hidden_dim=16,
                approximator_layers=1,
            ),
            flux_copy_inputs(),
            (4, 4),
        ),
        "longcat-image": Tiny(
            lambda: make_flux_copy("LongCatImageTransformer2DModel", pooled_projection_dim=8), longcat_inputs, (4, 4)
        ),
        "ovis-image": Tiny(
            lambda: make_flux_copy("OvisImageTransformer2DModel", out_channels=4), flux_copy_inputs(), (4, 4)
        ),
        "krea2": Tiny(make_krea2, krea2_inputs, (4, 4)),
        "bria": Tiny(lambda: make_flux_copy("BriaTransformer2DModel", rope_theta=5000), flux_copy_inputs(), (4, 4)),
        "bria-fibo": Tiny(
            lambda: make_flux_copy("BriaFiboTransformer2DModel", rope_theta=5000, text_encoder_dim=8),
            flux_copy_inputs(text_encoder_layers=bria_fibo_text_layers),
            (4, 4),
        ),
        "flux2": Tiny(make_flux2, flux2_inputs, (4, 4)),
        "flux3": Tiny(make_flux3, flux3_inputs, (4, 4)),
    }
)


# -- videogrid: Wan's and HunyuanVideo's copies, AnyFlow, Framepack ----------------------------------------------


def wan_like_inputs(model, grid, timestep, channels=4):
    """Inputs of Wan's copies: hidden_states (1, c, t, 2 h, 2 w) for patch (1, 2, 2), text of width 8."""
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, channels, t, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
    )


WAN_LIKE = dict(
    patch_size=(1, 2, 2),
    num_attention_heads=2,
    attention_head_dim=12,
    in_channels=4,
    out_channels=4,
    text_dim=8,
    freq_dim=8,
    ffn_dim=8,
    num_layers=1,
    rope_max_seq_len=64,
)


def make_wan_vace():
    from diffusers import WanVACETransformer3DModel

    torch.manual_seed(0)
    return WanVACETransformer3DModel(**WAN_LIKE, vace_layers=[0], vace_in_channels=4).eval()


def wan_vace_inputs(model, grid, timestep):
    inputs = wan_like_inputs(model, grid, timestep)
    inputs["control_hidden_states"] = torch.randn(inputs["hidden_states"].shape, generator=generator(1))
    return inputs


def make_wan_animate():
    from diffusers import WanAnimateTransformer3DModel

    torch.manual_seed(0)
    return WanAnimateTransformer3DModel(
        **{**WAN_LIKE, "in_channels": 12},
        latent_channels=4,
        image_dim=8,
        motion_encoder_channel_sizes={"4": 8, "8": 8, "16": 8},
        motion_encoder_size=16,
        motion_style_dim=8,
        motion_dim=4,
        motion_encoder_dim=8,
        face_encoder_hidden_dim=8,
        face_encoder_num_heads=2,
        inject_face_latents_blocks=1,
    ).eval()


def wan_animate_inputs(model, grid, timestep):
    """hidden_states hold the reference frame and T = t - 1 frames; the face video has 4 T - 3 frames."""
    t, h, w = grid
    inputs = wan_like_inputs(model, grid, timestep, channels=12)
    g = generator(1)
    inputs.update(
        encoder_hidden_states_image=torch.randn(1, 2, 8, generator=g),
        pose_hidden_states=torch.randn(1, 4, t - 1, 2 * h, 2 * w, generator=g),
        face_pixel_values=torch.randn(1, 3, 4 * (t - 1) - 3, 16, 16, generator=g),
    )
    return inputs


def make_skyreels_v2():
    from diffusers import SkyReelsV2Transformer3DModel

    torch.manual_seed(0)
    return SkyReelsV2Transformer3DModel(**WAN_LIKE).eval()


CHRONOEDIT_SKIP = 4  # the tiny ChronoEdit's rope_temporal_skip_len: two frames sit at times 0 and 3


def make_chronoedit():
    from diffusers import ChronoEditTransformer3DModel

    torch.manual_seed(0)
    return ChronoEditTransformer3DModel(**WAN_LIKE, rope_temporal_skip_len=CHRONOEDIT_SKIP).eval()


def make_sana_video():
    from diffusers import SanaVideoTransformer3DModel

    torch.manual_seed(0)
    return SanaVideoTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=12,
        num_layers=1,
        num_cross_attention_heads=2,
        cross_attention_head_dim=12,
        cross_attention_dim=24,
        caption_channels=8,
        sample_size=8,
    ).eval()


def make_anyflow(causal=False):
    from diffusers import AnyFlowFARTransformer3DModel, AnyFlowTransformer3DModel

    torch.manual_seed(0)
    if causal:  # two full-resolution chunks at most: earlier one-frame chunks become compressed context
        return AnyFlowFARTransformer3DModel(**WAN_LIKE, compressed_patch_size=(1, 4, 4), full_chunk_limit=2).eval()
    return AnyFlowTransformer3DModel(**WAN_LIKE).eval()


def anyflow_inputs(model, grid, timestep):
    """hidden_states (1, t, c, 2 h, 2 w), per-frame timesteps; FAR's chunks are one frame each."""
    t, h, w = grid
    g = generator()
    inputs = dict(
        hidden_states=torch.randn(1, t, 4, 2 * h, 2 * w, generator=g),
        timestep=torch.full((1, t), float(timestep)),
        r_timestep=torch.full((1, t), 0.5 * float(timestep)),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
    )
    if "chunk_partition" in _parameters(model):
        inputs["chunk_partition"] = [1] * t
    return inputs


def _parameters(model) -> list[str]:
    import inspect

    return list(inspect.signature(type(model).forward).parameters)


def make_hunyuan_video_15():
    from diffusers import HunyuanVideo15Transformer3DModel

    torch.manual_seed(0)
    return HunyuanVideo15Transformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=1,
        attention_head_dim=32,
        num_layers=1,
        num_refiner_layers=1,
        patch_size=1,
        patch_size_t=1,
        text_embed_dim=16,
        text_embed_2_dim=8,
        image_embed_dim=8,
        rope_axes_dim=(16, 8, 8),
    ).eval()


def hunyuan_video_15_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, h, w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
        encoder_attention_mask=torch.ones(1, 3),
        encoder_hidden_states_2=torch.randn(1, 2, 8, generator=g),
        encoder_attention_mask_2=torch.ones(1, 2),
        image_embeds=torch.randn(1, 2, 8, generator=g),
    )


def make_motif_video():
    from diffusers import MotifVideoTransformer3DModel

    torch.manual_seed(0)
    return MotifVideoTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=1,
        attention_head_dim=32,
        num_layers=1,
        num_single_layers=1,
        patch_size=1,
        patch_size_t=1,
        text_embed_dim=16,
        rope_axes_dim=(16, 8, 8),
    ).eval()


def motif_video_inputs(model, grid, timestep):
    t, h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, h, w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
        encoder_attention_mask=torch.ones(1, 3),
    )


def make_hunyuan_image():
    from diffusers import HunyuanImageTransformer2DModel

    torch.manual_seed(0)
    return HunyuanImageTransformer2DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=1,
        attention_head_dim=32,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=(1, 1),
        text_embed_dim=16,
        rope_axes_dim=(16, 16),
    ).eval()


def hunyuan_image_inputs(model, grid, timestep):
    h, w = grid
    g = generator()
    return dict(
        hidden_states=torch.randn(1, 4, h, w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
        encoder_attention_mask=torch.ones(1, 3),
    )


def make_framepack():
    from diffusers import HunyuanVideoFramepackTransformer3DModel

    torch.manual_seed(0)
    return HunyuanVideoFramepackTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=16,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        patch_size=2,
        patch_size_t=1,
        text_embed_dim=16,
        pooled_projection_dim=8,
        rope_axes_dim=(4, 6, 6),
        has_image_proj=True,
        image_proj_dim=8,
        has_clean_x_embedder=True,
    ).eval()


# Framepack's packing, as its pipeline lays out one section (a start frame, the frames being made, the 1x, 2x
# and 4x history), shortened: frame indices per stream
FRAMEPACK_INDICES = dict(
    indices_latents=[1, 2],
    indices_latents_clean=[0, 3],
    indices_latents_history_2x=[4, 5],
    indices_latents_history_4x=[6, 7, 8, 9],
)


def framepack_inputs(model, grid, timestep):
    """grid: the (h, w) tokens of every stream (2 x 2 patches); the frames are fixed by the packing."""
    h, w = grid
    g = generator()

    def latents(frames):
        return torch.randn(1, 4, frames, 2 * h, 2 * w, generator=g)

    indices = {name: torch.tensor(values) for name, values in FRAMEPACK_INDICES.items()}
    return dict(
        hidden_states=latents(2),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
        encoder_attention_mask=torch.ones(1, 3),
        pooled_projections=torch.randn(1, 8, generator=g),
        image_embeds=torch.randn(1, 2, 8, generator=g),
        guidance=torch.tensor([3000.0]),
        latents_clean=latents(2),
        latents_history_2x=latents(2),
        latents_history_4x=latents(4),
        **indices,
    )


TINY.update(
    {
        "wan-vace": Tiny(make_wan_vace, wan_vace_inputs, (3, 4, 4)),
        "wan-animate": Tiny(make_wan_animate, wan_animate_inputs, (3, 4, 4)),
        "skyreels-v2": Tiny(make_skyreels_v2, wan_like_inputs, (3, 4, 4)),
        "chronoedit": Tiny(make_chronoedit, wan_like_inputs, (CHRONOEDIT_SKIP, 4, 4)),
        "sana-video": Tiny(make_sana_video, wan_like_inputs, (3, 4, 4)),
        "anyflow": Tiny(make_anyflow, anyflow_inputs, (3, 4, 4)),
        "anyflow-far": Tiny(lambda: make_anyflow(causal=True), anyflow_inputs, (3, 4, 4)),
        "hunyuan-video-1.5": Tiny(make_hunyuan_video_15, hunyuan_video_15_inputs, (3, 4, 4)),
        "motif-video": Tiny(make_motif_video, motif_video_inputs, (3, 4, 4)),
        "hunyuan-image": Tiny(make_hunyuan_image, hunyuan_image_inputs, (4, 4)),
        "framepack": Tiny(make_framepack, framepack_inputs, (4, 4)),
    }
)


# -- groups in modules of their own (tiny_<group>.py beside this file) ------------------------------------------


def _group(name: str):
    """A group's tiny-config module, loaded once as a plain module."""
    import importlib.util
    import sys
    from pathlib import Path

    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


TINY.update(_group("tiny_kin").TINY)  # EmbedND variants, Qwen kin, Z-Image, Kandinsky
TINY.update(_group("tiny_tables_own").TINY)  # tables from the pipeline, image ropes of their own
TINY.update(_group("tiny_video_own").tiny_configs(Tiny))  # Mochi, Cosmos, Helios, SANA-WM, JoyImage, LTX-2
TINY.update(_group("tiny_omni").tiny_configs(Tiny))  # Cosmos 3
