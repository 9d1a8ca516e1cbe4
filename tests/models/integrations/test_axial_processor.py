"""use_axial_rope: diffusers' own DiTTransformer2DModel with axial RoPE instead of sin-cos."""

import copy

import pytest
import torch
from diffusers import DiTTransformer2DModel
from diffusers.models.attention_processor import Attention, AttnProcessor2_0

from axialrope.models import AxialRopeAttnProcessor, RopeConfig, use_axial_rope


@pytest.fixture
def diffusers_dit(perturb):
    torch.manual_seed(0)
    model = DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=3,
        num_layers=2,
        sample_size=8,
        patch_size=2,
        num_embeds_ada_norm=10,
    )
    return perturb(model).eval()


def _processors(model):
    return [m.processor for m in model.modules() if isinstance(m, Attention)]


def _call(model, x, labels=(1, 3)):
    labels = torch.tensor(labels[: x.shape[0]])
    return model(x, timestep=torch.full((x.shape[0],), 20), class_labels=labels).sample


def test_installs_on_every_self_attention_and_drops_the_absolute_embedding(diffusers_dit):
    rope = use_axial_rope(diffusers_dit, theta=100.0)
    assert diffusers_dit.pos_embed.pos_embed is None
    processors = _processors(diffusers_dit)
    assert len(processors) == 2 and all(isinstance(p, AxialRopeAttnProcessor) for p in processors)
    assert rope.embedding.axes_dims == (8, 8) and rope.config.theta == 100.0
    assert diffusers_dit.axial_rope is rope


def test_runs_on_a_grid_larger_than_its_sample_size(diffusers_dit):
    use_axial_rope(diffusers_dit)
    x = torch.randn(2, 3, 24, 24)  # sample_size is 8: a 12 x 12 token grid instead of 4 x 4
    out = _call(diffusers_dit, x)
    assert out.shape == x.shape and torch.isfinite(out).all()
    assert diffusers_dit.axial_rope.current[0].shape == (144, 8)


def _logits(processor, attn, hidden_states, grid, config):
    processor.grid_rope.config = config
    processor.grid_rope.current = processor.grid_rope.table(grid)
    q, k, _ = processor.project(attn, hidden_states)
    return q @ k.transpose(-1, -2)


def test_shifting_the_token_grid_leaves_the_attention_logits_unchanged(diffusers_dit):
    use_axial_rope(diffusers_dit)
    attn = diffusers_dit.transformer_blocks[0].attn1
    processor = attn.processor
    hidden_states = torch.randn(2, 20, 32, dtype=torch.float64)
    attn.double()
    base = _logits(processor, attn, hidden_states, (4, 5), RopeConfig())
    shifted = _logits(processor, attn, hidden_states, (4, 5), RopeConfig(offset=(13.0, -7.0)))
    torch.testing.assert_close(shifted, base, rtol=1e-6, atol=1e-6)
    stretched = _logits(processor, attn, hidden_states, (4, 5), RopeConfig(scale=2.0))
    assert not torch.allclose(stretched, base, atol=1e-3)  # the logits do see positions


def test_shifting_the_token_grid_leaves_the_model_output_unchanged(diffusers_dit):
    rope = use_axial_rope(diffusers_dit)
    x = torch.randn(2, 3, 16, 16)
    base = _call(diffusers_dit, x)
    rope.config = RopeConfig(offset=(5.0, 11.0))
    torch.testing.assert_close(_call(diffusers_dit, x), base, rtol=1e-4, atol=1e-5)


def test_with_all_coordinates_zero_it_is_diffusers_own_attention(diffusers_dit):
    """RoPE at position 0 is the identity: then only the processor's plumbing is left, and it
    must agree with diffusers' AttnProcessor2_0 on the same model without position embedding."""
    reference = copy.deepcopy(diffusers_dit)
    reference.pos_embed.pos_embed = None
    assert all(isinstance(p, AttnProcessor2_0) for p in _processors(reference))
    rope = use_axial_rope(diffusers_dit)
    rope.config = RopeConfig(scale=1e-30)  # every coordinate ~0 (a spacing of 0 is refused)
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(_call(diffusers_dit, x), _call(reference, x), rtol=1e-5, atol=1e-6)


def test_attention_scale_changes_the_output(diffusers_dit):
    rope = use_axial_rope(diffusers_dit)
    x = torch.randn(1, 3, 8, 8)
    base = _call(diffusers_dit, x)
    rope.config = RopeConfig(attention_scale=1.5)
    assert not torch.allclose(_call(diffusers_dit, x), base, atol=1e-5)


def test_it_trains(diffusers_dit):
    use_axial_rope(diffusers_dit)
    diffusers_dit.train()
    optimizer = torch.optim.SGD(diffusers_dit.parameters(), lr=0.1)
    x, target = torch.randn(2, 3, 16, 16), torch.randn(2, 3, 16, 16)
    losses = []
    for _ in range(3):
        loss = (_call(diffusers_dit, x) - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        assert diffusers_dit.transformer_blocks[0].attn1.to_q.weight.grad.abs().sum() > 0
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_bad_targets_are_rejected(diffusers_dit):
    with pytest.raises(TypeError, match="DiT-style diffusers model"):
        use_axial_rope(torch.nn.Linear(3, 3))
    use_axial_rope(diffusers_dit)
    with pytest.raises(ValueError, match="already applied"):
        use_axial_rope(diffusers_dit)
    with pytest.raises(ValueError, match="more than head_dim"):
        narrow = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, num_layers=1, sample_size=8)
        use_axial_rope(narrow, axes_dims=(8, 8))
