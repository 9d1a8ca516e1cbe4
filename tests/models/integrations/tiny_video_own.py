"""Tiny configs of the families with ropes of their own (Mochi, Cosmos and its ControlNet, Helios,
SANA-WM, JoyImage Edit and Edit Plus, LTX-2), merged into tiny_families.TINY at its end.

Each builds the class from its own constructor (seeded, eval mode, milliseconds on the CPU); a plain
module (tests are not a package).
"""

from __future__ import annotations

import torch


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# -- Mochi: learned frequencies --------------------------------------------------------------------------------

MOCHI_TOKENS = (3, 4)  # the (h, w) tokens of every tiny Mochi input: its grid is the time axis alone


def make_mochi():
    from diffusers import MochiTransformer3DModel

    torch.manual_seed(0)
    model = MochiTransformer3DModel(
        patch_size=2,
        num_attention_heads=2,
        attention_head_dim=16,
        num_layers=1,
        pooled_projection_dim=16,
        in_channels=4,
        text_embed_dim=8,
        time_embed_dim=8,
        max_sequence_length=4,
    ).eval()
    with torch.no_grad():  # learned frequencies start at zero: give them values as training would
        model.pos_frequencies.normal_(std=0.05, generator=_generator(2))
    return model


def mochi_inputs(model, grid, timestep):
    (t,), (h, w) = grid, MOCHI_TOKENS
    g = _generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_attention_mask=torch.ones(1, 3, dtype=torch.long),
    )


# -- Cosmos: a theta per axis ----------------------------------------------------------------------------------

COSMOS_LIKE = dict(
    num_attention_heads=2,
    attention_head_dim=12,
    mlp_ratio=2.0,
    text_embed_dim=8,
    adaln_lora_dim=4,
    max_size=(16, 32, 32),
    patch_size=(1, 2, 2),
    rope_scale=(2.0, 1.5, 1.0),
)
COSMOS_FPS = 16  # Cosmos2VideoToWorldPipeline's default: time positions 24 / 16 apart


def make_cosmos():
    from diffusers import CosmosTransformer3DModel

    torch.manual_seed(0)
    return CosmosTransformer3DModel(
        in_channels=4, out_channels=4, num_layers=1, extra_pos_embed_type=None, **COSMOS_LIKE
    ).eval()


def cosmos_inputs(model, grid, timestep):
    t, h, w = grid
    g = _generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        fps=COSMOS_FPS,
        padding_mask=torch.zeros(1, 1, 2 * h, 2 * w),
    )


def make_cosmos_controlnet():
    from diffusers import CosmosControlNetModel

    torch.manual_seed(0)
    return CosmosControlNetModel(
        n_controlnet_blocks=1, in_channels=6, latent_channels=6, model_channels=24, **COSMOS_LIKE
    ).eval()


def cosmos_controlnet_inputs(model, grid, timestep):
    """Cosmos2_5_TransferPipeline's call: control and base latents (4 channels each), no fps."""
    t, h, w = grid
    g = _generator()
    return dict(
        controls_latents=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        latents=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        condition_mask=torch.zeros(1, 1, t, 2 * h, 2 * w),
        padding_mask=torch.zeros(1, 1, 2 * h, 2 * w),
    )


# -- Helios: frame indices, one tensor ------------------------------------------------------------------------

# HeliosPipeline's numbering, shortened: the long (4), mid (2) and short (prefix + 1) history, then the chunk (2)
HELIOS_INDICES = dict(
    indices_latents_history_long=[1, 2, 3, 4],
    indices_latents_history_mid=[5, 6],
    indices_latents_history_short=[0, 7],
    indices_hidden_states=[8, 9],
)


def make_helios():
    from diffusers import HeliosTransformer3DModel

    torch.manual_seed(0)
    return HeliosTransformer3DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        out_channels=4,
        text_dim=8,
        freq_dim=8,
        ffn_dim=8,
        num_layers=1,
        rope_dim=(4, 6, 6),
    ).eval()


def helios_inputs(model, grid, timestep):
    """grid: the (h, w) tokens of every stream (2 x 2 patches); the frames are fixed by the numbering."""
    h, w = grid
    g = _generator()

    def latents(frames):
        return torch.randn(1, 4, frames, 2 * h, 2 * w, generator=g)

    indices = {name: torch.tensor([values]) for name, values in HELIOS_INDICES.items()}
    return dict(
        hidden_states=latents(2),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        latents_history_short=latents(2),
        latents_history_mid=latents(2),
        latents_history_long=latents(4),
        **indices,
    )


# -- SANA-WM: a complex grid rope, Gated DeltaNet and softmax blocks ------------------------------------------


def make_sana_wm():
    from diffusers import SanaWMTransformer3DModel

    torch.manual_seed(0)  # two blocks: a Gated DeltaNet one, then a softmax one
    return SanaWMTransformer3DModel(
        in_channels=4,
        num_layers=2,
        hidden_size=24,
        num_attention_heads=2,
        softmax_every_n=2,
        linear_head_dim=12,
        caption_channels=8,
        chunk_plucker_channels=8,
        chunk_plucker_post_attn_blocks=2,
        mlp_ratio=2.0,
        image_size=32,
    ).eval()


def sana_wm_inputs(model, grid, timestep):
    """Latents (1, c, t, h, w) for patch (1, 1, 1), per-frame timesteps (1, 1, t), no camera."""
    t, h, w = grid
    g = _generator()
    return dict(
        hidden_states=torch.randn(1, 4, t, h, w, generator=g),
        timestep=torch.full((1, 1, t), float(timestep)),
        encoder_hidden_states=torch.randn(1, 1, 3, 8, generator=g),
        encoder_attention_mask=torch.ones(1, 3),
    )


# -- JoyImage Edit: a rope that is a method of the model -------------------------------------------------------


def make_joyimage_edit():
    from diffusers import JoyImageEditTransformer3DModel

    torch.manual_seed(0)  # mrope: the text gets positions after the grid
    return JoyImageEditTransformer3DModel(
        patch_size=[1, 2, 2],
        in_channels=4,
        hidden_size=32,
        num_attention_heads=2,
        text_dim=8,
        mlp_width_ratio=2.0,
        num_layers=1,
        rope_dim_list=[4, 6, 6],
        rope_type="mrope",
        theta=256,
    ).eval()


def joyimage_edit_inputs(model, grid, timestep):
    """JoyImageEditPipeline's items (1, 2, c, 1, 2 h, 2 w): the reference image, then the output."""
    h, w = grid
    g = _generator()
    return dict(
        hidden_states=torch.randn(1, 2, 4, 1, 2 * h, 2 * w, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
    )


JOYIMAGE_REFERENCE = (1, 3, 5)  # the tiny Edit Plus's reference image, (t, h, w) tokens at its own size


def make_joyimage_edit_plus():
    from diffusers import JoyImageEditPlusTransformer3DModel

    torch.manual_seed(0)
    return JoyImageEditPlusTransformer3DModel(
        patch_size=[1, 2, 2],
        in_channels=4,
        hidden_size=32,
        num_attention_heads=2,
        text_dim=8,
        mlp_width_ratio=2.0,
        num_layers=1,
        rope_dim_list=[4, 6, 6],
        theta=256,
    ).eval()


def joyimage_edit_plus_inputs(model, grid, timestep):
    """JoyImageEditPlusPipeline's patchified components (1, patches, c, 1, 2, 2): the output, then a reference."""
    h, w = grid
    g = _generator()
    patches = h * w + JOYIMAGE_REFERENCE[1] * JOYIMAGE_REFERENCE[2]
    return dict(
        hidden_states=torch.randn(1, patches, 4, 1, 2, 2, generator=g),
        timestep=torch.tensor([float(timestep)]),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        encoder_hidden_states_mask=torch.ones(1, 3),
        shape_list=[[(1, h, w), JOYIMAGE_REFERENCE]],
    )


# -- LTX-2: coordinates from the pipeline, the video rope's y and x -------------------------------------------

LTX2_AUDIO_FRAMES = 5


def make_ltx2(rope_type="interleaved"):
    from diffusers import LTX2VideoTransformer3DModel

    torch.manual_seed(0)  # inner dim 20: 3 pairs per axis and 2 pass-through channels
    return LTX2VideoTransformer3DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=10,
        cross_attention_dim=20,
        audio_in_channels=4,
        audio_out_channels=4,
        audio_num_attention_heads=2,
        audio_attention_head_dim=4,
        audio_cross_attention_dim=8,
        num_layers=1,
        caption_channels=8,
        rope_type=rope_type,
    ).eval()


def ltx2_inputs(model, grid, timestep):
    """LTX2Pipeline's call: packed video and audio latents, the video coordinates from the rope's own method."""
    t, h, w = grid
    g = _generator()
    coords = model.rope.prepare_video_coords(1, t, h, w, torch.device("cpu"), fps=24.0)
    return dict(
        hidden_states=torch.randn(1, t * h * w, 4, generator=g),
        audio_hidden_states=torch.randn(1, LTX2_AUDIO_FRAMES, 4, generator=g),
        encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        audio_encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
        timestep=torch.tensor([float(timestep)]),
        num_frames=t,
        height=h,
        width=w,
        audio_num_frames=LTX2_AUDIO_FRAMES,
        fps=24.0,
        video_coords=coords,
    )


def tiny_configs(Tiny) -> dict:
    """This module's entries of TINY, built with tiny_families' `Tiny`."""
    return {
        "mochi": Tiny(make_mochi, mochi_inputs, (3,)),
        "cosmos": Tiny(make_cosmos, cosmos_inputs, (3, 4, 4)),
        "cosmos-controlnet": Tiny(make_cosmos_controlnet, cosmos_controlnet_inputs, (3, 4, 4)),
        "helios": Tiny(make_helios, helios_inputs, (4, 4)),
        "sana-wm": Tiny(make_sana_wm, sana_wm_inputs, (3, 4, 4)),
        "joyimage-edit": Tiny(make_joyimage_edit, joyimage_edit_inputs, (4, 4)),
        "joyimage-edit-plus": Tiny(make_joyimage_edit_plus, joyimage_edit_plus_inputs, (4, 4)),
        "ltx2": Tiny(make_ltx2, ltx2_inputs, (3, 4, 4)),
    }
