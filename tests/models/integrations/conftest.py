"""Tiny random configs of the six diffusers families, and how to call each (shared by the extrapolation tests).

Each `Case` builds its transformer (seeded, a few thousand weights, built in milliseconds), runs
it on a token grid with deterministic inputs, and fetches the table its rope gives for a grid.
The trained grids are tiny on purpose: the adapters take any, and tests pass them explicitly.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def flux_ids(h, w, text=0):
    """Flux's ids: text rows at 0, then the (y, x) grid (axis 0 = 0)."""
    ids = torch.zeros(h, w, 3)
    ids[..., 1] = torch.arange(h)[:, None]
    ids[..., 2] = torch.arange(w)[None, :]
    return torch.cat([torch.zeros(text, 3), ids.reshape(-1, 3)])


@dataclass
class Case:
    """A family under test.

    make(): the transformer, eval mode. run(model, grid, timestep): its output on a grid.
    table(model, grid, timestep): what its rope returns for the grid (family format), captured
    in a forward of the transformer. rope_table(model, grid): the same from calling the rope
    module (or CogVideoX's table builder) alone, without running the transformer (set the
    time on the handle first). trained: the tiny trained grid tests use. timestep_scale: the
    family's timestep at pure noise.
    """

    name: str
    make: Callable
    run: Callable
    table: Callable
    rope_table: Callable
    trained: tuple[int, ...]
    timestep_scale: float

    @property
    def video(self) -> bool:
        return len(self.trained) == 3

    def bigger(self, factor=2):
        return tuple(n * factor for n in self.trained)


# -- Flux -----------------------------------------------------------------------------------------------------


def make_flux(head_dim=16, axes=(4, 6, 6), heads=2):
    from diffusers import FluxTransformer2DModel

    torch.manual_seed(0)
    return FluxTransformer2DModel(patch_size=1, in_channels=4, num_layers=1, num_single_layers=1,
                                  attention_head_dim=head_dim, num_attention_heads=heads, joint_attention_dim=8,
                                  pooled_projection_dim=8, axes_dims_rope=axes).eval()


def run_flux(model, grid, timestep):
    h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, h * w, 4, generator=g),
                     encoder_hidden_states=torch.randn(1, 3, 8, generator=g),
                     pooled_projections=torch.randn(1, 8, generator=g), timestep=torch.tensor([timestep]),
                     img_ids=flux_ids(h, w), txt_ids=torch.zeros(3, 3)).sample


# -- Qwen-Image -----------------------------------------------------------------------------------------------


def make_qwen():
    from diffusers import QwenImageTransformer2DModel

    torch.manual_seed(0)
    return QwenImageTransformer2DModel(patch_size=2, in_channels=16, out_channels=4, num_layers=1,
                                       attention_head_dim=16, num_attention_heads=2, joint_attention_dim=16,
                                       axes_dims_rope=(4, 6, 6)).eval()


def run_qwen(model, grid, timestep):
    h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, h * w, 16, generator=g),
                     encoder_hidden_states=torch.randn(1, 5, 16, generator=g),
                     encoder_hidden_states_mask=torch.ones(1, 5, dtype=torch.long), timestep=torch.tensor([timestep]),
                     img_shapes=[[(1, h, w)]]).sample


# -- Wan --------------------------------------------------------------------------------------------------------


def make_wan(head_dim=12):
    from diffusers import WanTransformer3DModel

    torch.manual_seed(0)
    return WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=head_dim,
                                 in_channels=4, out_channels=4, text_dim=8, freq_dim=8, ffn_dim=8, num_layers=1,
                                 rope_max_seq_len=64).eval()


def run_wan(model, grid, timestep):
    t, h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, 4, t, 2 * h, 2 * w, generator=g), timestep=torch.tensor([timestep]),
                     encoder_hidden_states=torch.randn(1, 3, 8, generator=g)).sample


# -- HunyuanVideo ---------------------------------------------------------------------------------------------


def make_hunyuan():
    from diffusers import HunyuanVideoTransformer3DModel

    torch.manual_seed(0)
    return HunyuanVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=1, attention_head_dim=32,
                                          num_layers=1, num_single_layers=1, num_refiner_layers=1, patch_size=1,
                                          patch_size_t=1, text_embed_dim=16, pooled_projection_dim=8,
                                          rope_axes_dim=(16, 8, 8)).eval()


def run_hunyuan(model, grid, timestep):
    t, h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, 4, t, h, w, generator=g), timestep=torch.tensor([timestep]),
                     encoder_hidden_states=torch.randn(1, 3, 16, generator=g),
                     encoder_attention_mask=torch.ones(1, 3, dtype=torch.long),
                     pooled_projections=torch.randn(1, 8, generator=g), guidance=torch.tensor([3.0])).sample


# -- CogVideoX --------------------------------------------------------------------------------------------------


def make_cogvideox():
    from diffusers import CogVideoXTransformer3DModel

    torch.manual_seed(0)
    return CogVideoXTransformer3DModel(num_attention_heads=1, attention_head_dim=64, in_channels=4, out_channels=4,
                                       time_embed_dim=4, text_embed_dim=8, num_layers=1, sample_width=8,
                                       sample_height=8, sample_frames=9, patch_size=2, temporal_compression_ratio=4,
                                       max_text_seq_length=4, use_rotary_positional_embeddings=True).eval()


def cogvideox_pipeline_table(model, grid):
    """The table CogVideoXPipeline passes, from its own method (VAE factor 8)."""
    from diffusers import CogVideoXPipeline

    t, h, w = grid
    pipe = types.SimpleNamespace(vae_scale_factor_spatial=8, transformer=model)
    p = model.config.patch_size
    return CogVideoXPipeline._prepare_rotary_positional_embeddings(pipe, 8 * p * h, 8 * p * w, t, torch.device("cpu"))


def run_cogvideox(model, grid, timestep):
    t, h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, t, 4, 2 * h, 2 * w, generator=g),
                     encoder_hidden_states=torch.randn(1, 4, 8, generator=g), timestep=torch.tensor([timestep]),
                     image_rotary_emb=cogvideox_pipeline_table(model, grid)).sample


# -- LTX-Video ------------------------------------------------------------------------------------------------


LTX_SCALE = (8 / 25, 32, 32)  # LTXPipeline's rope_interpolation_scale at 25 fps


def make_ltx():
    from diffusers import LTXVideoTransformer3DModel

    torch.manual_seed(0)
    return LTXVideoTransformer3DModel(in_channels=4, out_channels=4, num_attention_heads=2, attention_head_dim=16,
                                      cross_attention_dim=32, num_layers=1, caption_channels=8).eval()


def run_ltx(model, grid, timestep):
    t, h, w = grid
    g = _gen()
    with torch.no_grad():
        return model(hidden_states=torch.randn(1, t * h * w, 4, generator=g),
                     encoder_hidden_states=torch.randn(1, 3, 8, generator=g), timestep=torch.tensor([timestep]),
                     encoder_attention_mask=torch.ones(1, 3, dtype=torch.long), num_frames=t, height=h, width=w,
                     rope_interpolation_scale=LTX_SCALE).sample


# -- tables through the transformer's own call --------------------------------------------------------------


def _through_forward(model, grid, timestep, run, attribute):
    """The rope output of one forward (captured by a hook on model.<attribute>)."""
    seen = []
    handle = getattr(model, attribute).register_forward_hook(lambda module, args, out: seen.append(out))
    try:
        run(model, grid, timestep)
    finally:
        handle.remove()
    return seen[0]


def _cogvideox_table(model, grid, timestep):
    """The image_rotary_emb the transformer's blocks receive (after any pre-hook swapped it)."""
    seen = []

    def record(module, args, kwargs):
        seen.append(kwargs["image_rotary_emb"])

    handle = model.transformer_blocks[0].register_forward_pre_hook(record, with_kwargs=True)
    try:
        run_cogvideox(model, grid, timestep)
    finally:
        handle.remove()
    return seen[0]


def _cogvideox_rope_table(model, grid):
    given = cogvideox_pipeline_table(model, grid)
    t, h, w = grid
    table = model._axialrope_extrapolation.rope(torch.empty(1, t, 4, 2 * h, 2 * w), given)
    return given if table is None else table


CASES = {
    "flux": Case("flux", make_flux, run_flux, lambda m, g, t: _through_forward(m, g, t, run_flux, "pos_embed"),
                 lambda m, g: m.pos_embed(torch.cat([torch.zeros(3, 3), flux_ids(*g)])), (4, 4), 1.0),
    "qwen-image": Case("qwen-image", make_qwen, run_qwen,
                       lambda m, g, t: _through_forward(m, g, t, run_qwen, "pos_embed"),
                       lambda m, g: m.pos_embed([[(1, *g)]], device=torch.device("cpu"), max_txt_seq_len=5),
                       (4, 4), 1.0),
    "wan": Case("wan", make_wan, run_wan, lambda m, g, t: _through_forward(m, g, t, run_wan, "rope"),
                lambda m, g: m.rope(torch.empty(1, 4, g[0], 2 * g[1], 2 * g[2])), (3, 4, 4), 1000.0),
    "hunyuan-video": Case("hunyuan-video", make_hunyuan, run_hunyuan,
                          lambda m, g, t: _through_forward(m, g, t, run_hunyuan, "rope"),
                          lambda m, g: m.rope(torch.empty(1, 4, *g)), (3, 4, 4), 1000.0),
    "cogvideox": Case("cogvideox", make_cogvideox, run_cogvideox, _cogvideox_table, _cogvideox_rope_table,
                      (3, 4, 4), 1000.0),
    "ltx-video": Case("ltx-video", make_ltx, run_ltx, lambda m, g, t: _through_forward(m, g, t, run_ltx, "rope"),
                      lambda m, g: m.rope(torch.empty(1, 1, 4), *g, LTX_SCALE), (3, 4, 4), 1000.0),
}


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every integration test runs on one torch thread (tests/conftest.py)."""


@pytest.fixture(params=list(CASES))
def case(request) -> Case:
    return CASES[request.param]


@pytest.fixture
def tiny():
    """This module's builders and helpers, for tests that need more than `case`."""
    return types.SimpleNamespace(
        CASES=CASES, LTX_SCALE=LTX_SCALE, flux_ids=flux_ids, make_flux=make_flux, make_wan=make_wan,
        make_hunyuan=make_hunyuan, make_cogvideox=make_cogvideox, make_ltx=make_ltx,
        cogvideox_pipeline_table=cogvideox_pipeline_table, run_flux=run_flux, run_wan=run_wan,
    )
