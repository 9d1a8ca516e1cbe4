"""CogVideoX's tables from the pipeline: non-square grids, and RIFLEx on CogVideoX 1.5 as its authors
(their 1.5 branch of cogvideox.py passes no k)."""

import numpy as np
import torch

from axialrope.models import apply_extrapolation

TRAINED = (3, 4, 4)


def _table(model, grid, timestep, tiny, latent_frames=None):
    """The table the blocks receive for hidden_states of `grid` tokens (CogVideoX 1.5: pairs of frames)."""
    t, h, w = grid
    frames = latent_frames or t
    g = torch.Generator().manual_seed(0)
    given = tiny.cogvideox_pipeline_table(model, (frames, h, w))
    seen = []
    hook = model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw["image_rotary_emb"]), with_kwargs=True)
    with torch.no_grad():
        model(
            hidden_states=torch.randn(1, frames, 4, 2 * h, 2 * w, generator=g),
            encoder_hidden_states=torch.randn(1, 4, 8, generator=g),
            timestep=torch.tensor([timestep]),
            image_rotary_emb=given,
        )
    hook.remove()
    return given, seen[0]


def test_an_axis_within_its_trained_length_leaves_the_pipelines_squeeze_once_another_is_scaled(tiny, reference):
    model = tiny.make_cogvideox()
    grid = (3, 4, 8)  # height as trained, width twice: the pipeline squeezes both into its 4 x 4 base
    handle = apply_extrapolation(model, "pi", trained_grid=TRAINED)
    given, ours = _table(model, grid, 500.0, tiny)
    handle.remove()
    dims = (16, 24, 24)
    per_axis = [
        (reference.base_freqs(16, 1e4), 1.0),
        (reference.base_freqs(24, 1e4), 1.0),
        (reference.base_freqs(24, 1e4) / 2, 1.0),
    ]
    angles = [reference.grid_indices(grid)[:, a, None] * f for a, (f, _) in enumerate(per_axis)]
    expected = reference.interleaved(angles, [1.0, 1.0, 1.0])
    height = slice(dims[0], dims[0] + dims[1])
    assert not torch.allclose(given[0][:, height], expected[0][:, height])  # the pipeline's squeezed rows
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)  # token indices on every spatial axis


def test_riflex_keeps_the_pipelines_spatial_positions(tiny):
    model = tiny.make_cogvideox()
    grid = (30, 4, 8)
    handle = apply_extrapolation(model, "riflex", trained_grid=TRAINED)
    given, ours = _table(model, grid, 500.0, tiny)
    handle.remove()
    assert torch.equal(ours[0][:, 16:], given[0][:, 16:]) and not torch.equal(ours[0][:, :16], given[0][:, :16])


def _cogvideox_15():
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
        patch_size_t=2,
        temporal_compression_ratio=4,
        max_text_seq_length=4,
        patch_bias=False,
        use_rotary_positional_embeddings=True,
    ).eval()


def test_riflex_on_cogvideox_1_5_is_the_pipelines_table_as_its_authors_leave_it(tiny, authors):
    model = _cogvideox_15()
    grid = (30, 4, 4)  # 30 tokens of two latent frames each
    handle = apply_extrapolation(model, "riflex", trained_grid=TRAINED)
    assert handle.extrapolation.riflex_index is None
    given, ours = _table(model, grid, 500.0, tiny, latent_frames=60)
    handle.remove()
    assert ours is given  # no k: the pipeline's own table, untouched
    handle = apply_extrapolation(model, "riflex", trained_grid=TRAINED, riflex_index=2)  # a k of one's own
    given, ours = _table(model, grid, 500.0, tiny, latent_frames=60)
    handle.remove()
    frames = np.repeat(np.arange(30.0), 16)[:, None]
    temporal = torch.from_numpy(np.cos(frames * authors.riflex(16, 1e4, 2, 30))).float().repeat_interleave(2, -1)
    torch.testing.assert_close(ours[0][:, :16], temporal, rtol=0, atol=1e-6)
