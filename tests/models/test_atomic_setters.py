"""Model settings that refuse a value change nothing: outputs after the failed call are bit-identical."""

import pytest
import torch

from axialrope import RopeScaling
from axialrope.models import TextLMConfig, TinyCausalLM
from axialrope.models.axial_dit.position_encoding import GridRope, RopeConfig

# valid RopeConfigs that an image DiT (2 axes) must refuse, each at a later check than the last
BAD_CONFIGS = [
    RopeConfig(theta=(500.0, 500.0, 500.0)),
    RopeConfig(theta=500.0, offset=(1.0, 2.0, 3.0)),
    RopeConfig(theta=500.0, scaling=(None, RopeScaling("riflex", 2.0, 4, riflex_index=99))),
    RopeConfig(theta=500.0, scaling=RopeScaling("ntk", 1e300)),
]


def forward(model):
    x = torch.linspace(-1, 1, 3 * 8 * 8).reshape(1, 3, 8, 8)
    with torch.no_grad():
        return model(x, torch.tensor([500.0]), class_labels=torch.tensor([1])).sample


@pytest.mark.parametrize("config", BAD_CONFIGS)
def test_a_failed_rope_config_leaves_the_model_as_it_was(make_model, config):
    model = make_model()
    model.rope_config = RopeConfig(theta=(100.0, 1e4), scaling=(RopeScaling("linear", 2.0), None))
    before, old = forward(model), model.rope_config
    thetas, scalings = model.rope.embedding.thetas, model.rope.embedding.scalings
    with pytest.raises(ValueError):
        model.rope_config = config
    assert model.rope_config is old
    assert (model.rope.embedding.thetas, model.rope.embedding.scalings) == (thetas, scalings)
    assert torch.equal(forward(model), before)


def test_a_sincos_model_refuses_rope_settings_and_keeps_its_own(make_model):
    model = make_model(position_encoding="sincos")
    model.rope_config = RopeConfig(attention_scale=1.5)
    before, old = forward(model), model.rope_config
    for bad in (RopeConfig(scaling=RopeScaling("linear", 2.0)), RopeConfig(offset=1.0), "rope"):
        with pytest.raises((ValueError, TypeError)):
            model.rope_config = bad
    assert model.rope_config is old and torch.equal(forward(model), before)


def test_grid_rope_keeps_its_config_and_tables():
    rope = GridRope((8, 8), RopeConfig(theta=300.0))
    before, old = rope.table((3, 4), num_text_tokens=2), rope.config
    for bad in BAD_CONFIGS:
        with pytest.raises(ValueError):
            rope.config = bad
    assert rope.config is old and rope.embedding.thetas == (300.0, 300.0)
    assert all(torch.equal(a, b) for a, b in zip(before, rope.table((3, 4), num_text_tokens=2), strict=True))


@pytest.mark.parametrize(
    "scaling, theta",
    [
        ({"rope_type": "linear"}, None),  # no factor
        ({"rope_type": "riflex", "factor": 2.0, "original_max_position_embeddings": 4, "riflex_index": 99}, 500.0),
        (None, 0.5),
        ({"rope_type": "ntk", "factor": 1e300}, 500.0),
    ],
)
def test_a_failed_set_rope_scaling_leaves_every_layer_as_it_was(scaling, theta):
    torch.manual_seed(0)
    model = TinyCausalLM(
        TextLMConfig(
            vocab_size=8,
            dim=16,
            depth=2,
            num_heads=2,
            num_kv_heads=1,
            rope_scaling={"rope_type": "linear", "factor": 2.0},
        )
    ).eval()
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    before, config = model(tokens)[0], model.config
    with pytest.raises(ValueError):
        model.set_rope_scaling(scaling, theta=theta)
    assert model.config is config
    assert all(block.attn.rope.thetas == (10000.0,) for block in model.blocks)
    assert torch.equal(model(tokens)[0], before)
