"""LTX-2: the video rope's t, y and x take the method, in both table layouts; the audio and
cross-attention ropes stay as trained."""

import sys

import pytest
import torch

from axialrope.models import apply_extrapolation


@pytest.mark.parametrize("method", ["pi", "yarn", "kappa-ntk"])
def test_the_split_layout_is_exact_at_the_trained_grid_and_its_formula_beyond(method, tiny, reference, authors):
    tiny_video_own = sys.modules["tiny_video_own"]  # loaded by tiny_families.py
    family = tiny.FAMILY["ltx2"]
    model = tiny_video_own.make_ltx2("split")
    small = tiny.TINY["ltx2"]
    timestep = family.time.timestep_at(0.6)
    at_trained = tiny.run(model, small, small.trained, timestep)
    with apply_extrapolation(model, method, trained_grid=small.trained):
        assert torch.equal(tiny.run(model, small, small.trained, timestep), at_trained)
        ours = tiny.rope_table(model, family, small, (6, 8, 8), timestep)
    grid = (6, 8, 8)
    expected = reference.ltx2_reference(
        family, model, small.inputs(model, grid, timestep), grid, small.trained, method, timestep, authors
    )
    assert ours[0].shape == (1, 2, 6 * 8 * 8, 5)  # (b, heads, seq, head_dim // 2)
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


def test_the_audio_and_cross_attention_ropes_stay_as_trained(tiny):
    small = tiny.TINY["ltx2"]
    model = small.make()
    ropes = ("audio_rope", "cross_attn_rope", "cross_attn_audio_rope")

    def outputs():
        seen = {}
        hooks = [
            getattr(model, name).register_forward_hook(lambda m, a, out, name=name: seen.setdefault(name, out))
            for name in ropes
        ]
        tiny.run(model, small, (6, 8, 8), 600.0)
        for hook in hooks:
            hook.remove()
        return seen

    plain = outputs()
    with apply_extrapolation(model, "kappa-yarn", trained_grid=small.trained):
        changed = outputs()
    for name in ropes:
        assert all(torch.equal(a, b) for a, b in zip(plain[name], changed[name], strict=True)), name


def test_a_longer_video_takes_the_method_on_its_time_axis_and_riflex_past_its_period(tiny):
    """The tiny model's slowest time pair turns once in 2 pos_embed_max_pos seconds: 40 s, 120 latent frames
    at 24 fps; riflex (k derived: that pair) leaves shorter videos as trained and acts beyond."""
    family, small = tiny.FAMILY["ltx2"], tiny.TINY["ltx2"]
    model = small.make()
    timestep = family.time.timestep_at(0.6)

    def acts(method, frames):
        grid = (frames, 2, 2)
        plain = tiny.rope_table(model, family, small, grid, timestep)
        with apply_extrapolation(model, method, trained_grid=small.trained) as handle:
            ours = tiny.rope_table(model, family, small, grid, timestep)
        return handle, not all(torch.equal(a, b) for a, b in zip(ours, plain, strict=True))

    assert acts("pi", 6)[1] and acts("ntk", 6)[1]
    handle, changed = acts("riflex", 100)
    assert handle.family.riflex == () and not changed
    assert acts("riflex", 130)[1]
