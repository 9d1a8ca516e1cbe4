"""spa on Wan's grid kind (Wan, Wan VACE, Wan Animate, SkyReels-V2): the spatial axes bundled by the port's
rules, time as the plan leaves it (its trained positions); each self-attention call the mean of the family's
processor over the variants' (cos, sin) tables."""

import numpy as np
import torch

from axialrope.models import apply_extrapolation


def _wan_tables(positions, dims, theta=10000.0):
    """Wan's cos, sin (1, seq, 1, sum(dims)) float32 at (seq, 3) float64 positions: per axis the angles
    position * theta^(-2i/d) in float64, each pair's value twice."""
    parts = [positions[:, [a]] * theta ** -(np.arange(0, d, 2) / d) for a, d in enumerate(dims)]
    angles = torch.from_numpy(np.concatenate(parts, axis=1)).repeat_interleave(2, dim=1)
    return tuple(f(angles).to(torch.float32)[None, :, None] for f in (torch.cos, torch.sin))


def test_self_attention_is_the_mean_over_the_ports_variants(tiny, spa_port):
    """The self-attention's output is the mean over the variants, written out here from the port's bundles (rows
    and columns bundled, the time column kept), of Wan's own processor with the variant's tables."""
    model = tiny.make_wan()
    handle = apply_extrapolation(model, "spa", trained_grid=(2, 4, 4))
    attn = model.blocks[0].attn1
    captured = {}
    remove = attn.register_forward_hook(
        lambda m, a, kw, out: captured.update(args=a, kwargs=dict(kw), out=out), with_kwargs=True
    )
    grid = (3, 8, 6)
    with torch.no_grad():
        model(**tiny.families.wan_inputs(model, grid, 700.0))
    remove.remove()

    plan = handle.rope.plan(grid)
    assert plan.bundled_axes == (1, 2) and plan.scalings == (None, None, None)
    ts, ys, xs = np.meshgrid(*(np.arange(n) for n in grid), indexing="ij")
    ids = np.stack([ts.ravel(), ys.ravel(), xs.ravel()], axis=1).astype(np.float64)
    variants = spa_port.variants(ids, trained_extent=4, largest_index=3)
    assert len(variants) == 2 * plan.bundle_size - 1 > 1
    assert all(np.array_equal(v[:, 0], ids[:, 0]) for v in variants)  # time as it is
    inner = attn.processor.processor
    hidden = captured["args"][0]
    outs = []
    for variant in variants:
        with torch.no_grad():
            outs.append(inner(attn, hidden, None, None, _wan_tables(variant, (4, 4, 4))))
    torch.testing.assert_close(captured["out"], torch.stack(outs).mean(0), rtol=1e-5, atol=1e-6)
    handle.remove()


def test_time_keeps_its_positions_and_only_space_is_bundled(tiny):
    """Within the trained spatial extent nothing is bundled (a longer video alone: Wan's own table, time at
    its positions); beyond it the first variant's time channels are Wan's own, its spatial ones bundled."""
    model = tiny.make_wan()
    handle = apply_extrapolation(model, "spa", trained_grid=(2, 4, 4))
    assert handle.rope.plan((6, 4, 4)) is None
    longer = torch.zeros(1, 4, 6, 8, 8)  # (6, 4, 4) tokens
    assert all(torch.equal(a, b) for a, b in zip(handle.rope(longer), handle.rope.original(longer), strict=True))
    latent = torch.zeros(1, 4, 3, 16, 12)  # (3, 8, 6) tokens
    cos, sin = handle.rope(latent)
    plain_cos, plain_sin = handle.rope.original(latent)
    torch.testing.assert_close(cos[..., :4], plain_cos[..., :4], rtol=0, atol=1e-6)
    torch.testing.assert_close(sin[..., :4], plain_sin[..., :4], rtol=0, atol=1e-6)
    assert not torch.allclose(cos[..., 4:], plain_cos[..., 4:])
    handle.remove()
