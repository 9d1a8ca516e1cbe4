"""LTX-2: the video rope's y and x take the method, in both table layouts; time and the audio and
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
        ours = tiny.rope_table(model, family, small, (8, 8), timestep)
    expected = reference.ltx2_reference(family, model, small.inputs(model, (8, 8), timestep), (8, 8), small.trained,
                                        method, timestep, authors)
    assert ours[0].shape == (1, 2, 2 * 8 * 8, 5)  # (b, heads, seq, head_dim // 2)
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


def test_the_audio_and_cross_attention_ropes_stay_as_trained(tiny):
    small = tiny.TINY["ltx2"]
    model = small.make()
    ropes = ("audio_rope", "cross_attn_rope", "cross_attn_audio_rope")

    def outputs():
        seen = {}
        hooks = [getattr(model, name).register_forward_hook(
            lambda m, a, out, name=name: seen.setdefault(name, out)) for name in ropes]
        tiny.run(model, small, (8, 8), 600.0)
        for hook in hooks:
            hook.remove()
        return seen

    plain = outputs()
    with apply_extrapolation(model, "kappa-yarn", trained_grid=small.trained):
        changed = outputs()
    for name in ropes:
        assert all(torch.equal(a, b) for a, b in zip(plain[name], changed[name], strict=True)), name
