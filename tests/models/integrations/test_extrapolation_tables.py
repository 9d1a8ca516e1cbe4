"""Family-specific tables: LTX-Video through the core's representation, the DyPE and RIFLEx authors'
numbers on the real models' rope settings, per-axis scales, caching, context-parallel shards.
(Every family's every method against its formula: test_families.py.)"""

import math

import numpy as np
import pytest
import torch

from axialrope import rope_frequencies
from axialrope.models import apply_extrapolation

T = 0.6  # the diffusion time of the tables under test


@pytest.mark.parametrize("method", ["yarn", "dype-yarn", "kappa-yarn", "riflex"])
def test_ltx_tables_are_the_cores_axial_rope_in_ltx_order(method, tiny, reference):
    """LTX-Video's angles omega_i (2 g - 1) are the core's RoPE with base theta^(n/(n-1)) at
    c = (pi/2) theta (2 g - 1); every method's table is that with the method's per-axis scalings."""
    from axialrope import AxialRotaryEmbedding

    model = tiny.make_ltx()
    original, trained, grid = model.rope, (3, 4, 4), (40, 8, 8)
    handle = apply_extrapolation(model, method, trained_grid=trained)
    ours = tiny.CASES["ltx-video"].table(model, grid, T * 1000)
    n = original.dim // 6
    steps = [s * p / b for s, p, b in zip(tiny.LTX_SCALE, (1, 1, 1), (20, 2048, 2048), strict=True)]
    spacing = [math.pi * 10000.0 * step for step in steps]  # position units between neighbouring tokens
    plan = handle.extrapolation.plan(trained, grid, T, token_spacing=spacing)
    handle.remove()
    g = torch.from_numpy(reference.grid_indices(grid) * np.array(steps))
    embedding = AxialRotaryEmbedding((2 * n,) * 3, theta=10000.0 ** (n / (n - 1)), scaling=list(plan.scalings))
    cos, sin = (t * math.sqrt(plan.logit_scale) for t in embedding(math.pi / 2 * 10000.0 * (2 * g - 1)))
    order = [a * n + (n - 1 - i) for i in range(n) for a in range(3)]
    pad = original.dim % 6
    for table, half, fill in ((ours[0], cos, math.sqrt(plan.logit_scale)), (ours[1], sin, 0.0)):
        torch.testing.assert_close(table[0, :, pad:], half[:, order].repeat_interleave(2, -1), rtol=0, atol=1e-7)
        torch.testing.assert_close(table[0, :, :pad], torch.full_like(table[0, :, :pad], fill))
    assert method != "riflex" or any(s is not None for s in plan.scalings)


def test_the_trained_ltx_angles_are_ltxs_own_formula(tiny, authors, reference):
    """At its trained grid the core representation reproduces LTX's float64 formula (LTX itself
    computes in float32, so its own table is only close)."""
    model = tiny.make_ltx()
    grid = (3, 4, 4)
    inputs = tiny.TINY["ltx-video"].inputs(model, grid, 0.0)
    expected = reference.ltx_reference(tiny.FAMILY["ltx-video"], model, inputs, grid, grid, "none", 0.0, authors)
    own = tiny.CASES["ltx-video"].table(model, grid, 0.0)
    for a, b in zip(own, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-3)  # float32 angles of up to (pi / 2) theta


def test_a_smaller_axis_keeps_its_trained_frequencies(tiny):
    """Only the axis beyond its trained length is scaled; s_a = max(1, L_a / L_a_train)."""
    model = tiny.make_wan()
    trained = (3, 4, 4)
    handle = apply_extrapolation(model, "pi", trained_grid=trained)
    wide = tiny.CASES["wan"].table(model, (2, 4, 12), 500.0)
    handle.remove()
    plain = tiny.CASES["wan"].table(model, (2, 4, 12), 500.0)
    width = model.rope.attention_head_dim
    x = slice(width - 2 * (width // 6), width)  # the x axis's columns (last block)
    torch.testing.assert_close(wide[0][..., : x.start], plain[0][..., : x.start], rtol=0, atol=1e-7)
    assert not torch.allclose(wide[0][..., x], plain[0][..., x])


# -- the authors' own numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [1.0, 0.5, 0.1])
@pytest.mark.parametrize("method", ["dype-yarn", "dype-ntk"])
def test_flux_dype_tables_equal_the_authors_formula(method, t, authors, tiny, reference):
    """FLUX.1's rope (16, 56, 56), theta 10000, trained 64 x 64 tokens (the default), at 2x: DyPE's tables."""
    model = tiny.make_flux(head_dim=128, axes=(16, 56, 56), heads=1)
    handle = apply_extrapolation(model, method)
    assert handle.trained_grid == (64, 64)
    handle.time.set(torch.tensor([t]))  # what the forward pre-hook does with Flux's sigma
    ids = tiny.flux_ids(128, 96, text=4)
    cos, sin = model.pos_embed(ids)
    handle.remove()
    angles = []
    for axis, (dim, scale) in enumerate(((16, 1.0), (56, 2.0), (56, 1.5))):
        if axis == 0:
            freqs, gain = reference.base_freqs(16, 10000.0), 1.0
        elif method == "dype-yarn":
            freqs, gain = authors.dype_yarn(dim, 10000.0, scale, 64, t)
        else:
            freqs, gain = authors.dype_ntk(dim, 10000.0, scale, t), 1.0
        angles.append((ids[:, axis, None].double().numpy() * freqs, gain))
    expected = reference.interleaved([a for a, _ in angles], [g for _, g in angles])
    torch.testing.assert_close(cos, expected[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(sin, expected[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("family", ["hunyuan-video", "cogvideox"])
def test_riflex_uses_the_published_k_past_n_k_only(family, authors, tiny, reference):
    """HunyuanVideo: k = 4, N_k = 50 (theta 256); CogVideoX-5B: k = 2, N_k = 20 (theta 10000); both on
    16 temporal channels, 1-based k, trained grids from the table (33 and 13 latent frames)."""
    k, n_k, theta = (4, 50, 256.0) if family == "hunyuan-video" else (2, 20, 10000.0)
    case = tiny.CASES[family]
    model = tiny.make_hunyuan() if family == "hunyuan-video" else tiny.make_cogvideox()
    plain = {frames: case.table(model, (frames, 2, 2), 900.0) for frames in (n_k, n_k + 7)}
    handle = apply_extrapolation(model, "riflex")
    assert handle.extrapolation.riflex_index == k
    at_n_k = case.table(model, (n_k, 2, 2), 900.0)
    longer = case.table(model, (n_k + 7, 2, 2), 900.0)
    handle.remove()
    assert all(torch.equal(a, b) for a, b in zip(at_n_k, plain[n_k], strict=True))  # not past N_k: as trained
    frames = np.repeat(np.arange(n_k + 7.0), 4)[:, None]
    expected = reference.interleaved([frames * authors.riflex(16, theta, k, n_k + 7)], [1.0])
    for ours, before, reference in zip(longer, plain[n_k + 7], expected, strict=True):
        torch.testing.assert_close(ours[:, :16], reference, rtol=0, atol=1e-6)  # the temporal block
        torch.testing.assert_close(ours[:, 16:], before[:, 16:], rtol=0, atol=1e-6)  # spatial as trained


def test_wan_riflex_k_follows_the_authors_rule(authors, tiny, reference):
    """RIFLEx publishes no k for Wan; identify_k at the trained 21 latent frames and the shortest
    period beyond them agree: k = 4, N_k = 22 for Wan's 44 temporal channels."""
    from axialrope.frequencies import riflex_index_beyond

    model = tiny.make_wan(head_dim=128)
    assert authors.identify_k(10000.0, 44, 21) == (4, 22)
    assert riflex_index_beyond(rope_frequencies(44)[0], 21) + 1 == 4
    handle = apply_extrapolation(model, "riflex")
    assert handle.trained_grid == (21, 30, 52) and handle.extrapolation.riflex_index == 4
    table = tiny.CASES["wan"].table(model, (30, 1, 1), 900.0)
    handle.remove()
    expected = reference.interleaved([np.arange(30.0)[:, None] * authors.riflex(44, 10000.0, 4, 30)], [1.0])
    torch.testing.assert_close(table[0][0, :, 0, :44], expected[0], rtol=0, atol=1e-6)


# -- time, cache, context parallelism --------------------------------------------------------------------------


def test_tables_are_cached_per_grid_method_and_time(tiny):
    model = tiny.make_wan()
    case = tiny.CASES["wan"]
    handle = apply_extrapolation(model, "yarn", trained_grid=case.trained)
    first = case.table(model, case.bigger(), 900.0)
    assert case.table(model, case.bigger(), 100.0)[0] is first[0]  # a static method: every step the same table
    assert case.table(model, (6, 8, 4), 900.0)[0] is not first[0]
    handle.remove()
    handle = apply_extrapolation(model, "dype-yarn", trained_grid=case.trained, cache_size=2)
    early, late = (case.table(model, case.bigger(), t)[0] for t in (900.0, 100.0))
    assert early is not late and case.table(model, case.bigger(), 900.0)[0] is early
    case.table(model, (6, 8, 4), 900.0)
    assert handle.rope.cache_info().currsize == 2
    handle.remove()


def test_a_shard_of_flux_ids_gets_the_rows_of_the_global_table(tiny):
    """Context parallelism shards Flux's img_ids and txt_ids; the scale must come from the whole grid."""
    model = tiny.make_flux()
    handle = apply_extrapolation(model, "dype-yarn", trained_grid=(4, 4))
    handle.time.set(torch.tensor([0.8]))
    text, image = torch.zeros(4, 3), tiny.flux_ids(8, 12)
    rope = model.pos_embed
    rope.text_ids, rope.image_ids = text, image  # what the transformer's pre-hook saw
    whole = rope(torch.cat([text, image]))
    for rank in range(4):  # diffusers splits each of txt_ids and img_ids in equal chunks
        txt_rows, img_rows = text.chunk(4)[rank], image.chunk(4)[rank]
        shard = rope(torch.cat([txt_rows, img_rows]))
        rows = torch.cat([torch.arange(4).chunk(4)[rank], 4 + torch.arange(96).chunk(4)[rank]])
        assert all(torch.equal(s, w[rows]) for s, w in zip(shard, whole, strict=True))
    handle.remove()


def test_the_pre_hook_sees_the_whole_grid_before_a_context_parallel_split(tiny):
    """diffusers' context-parallel hooks replace `forward`; torch's pre-hooks run before it, so the
    rope's plan comes from the unsplit img_ids even when the rope itself sees a shard."""
    model = tiny.make_flux()
    captured = []
    handle = apply_extrapolation(model, "pi", trained_grid=(4, 4))
    model.pos_embed.register_forward_hook(lambda m, a, out: captured.append((a[0], out)))
    forward = model.forward

    def first_half(hidden_states, img_ids, txt_ids, **kwargs):  # rank 0 of 2, as the split hook would pass
        half = img_ids.shape[0] // 2
        return forward(hidden_states=hidden_states[:, :half], img_ids=img_ids[:half], txt_ids=txt_ids, **kwargs)

    model.forward = first_half
    tiny.run_flux(model, (8, 8), 0.5)
    del model.forward
    ids, shard_table = captured[-1]
    handle.remove()
    rope_of_whole = apply_extrapolation(model, "pi", trained_grid=(4, 4))
    text = tiny.TINY["flux"].inputs(model, (8, 8), 0.5)["txt_ids"].shape[0]
    full = model.pos_embed(torch.cat([torch.zeros(text, 3), tiny.flux_ids(8, 8)]))
    rope_of_whole.remove()
    assert ids.shape[0] == text + 32
    assert all(torch.equal(s, f[: text + 32]) for s, f in zip(shard_table, full, strict=True))
