"""TinyCausalLM: cached generation, RoPE scaling swapped after training, input checks."""

import math

import pytest
import torch

from axialrope import rope_frequencies
from axialrope.models import TextLMConfig, TinyCausalLM

TRAINED = 128


def tiny_model(seed: int = 0, **overrides) -> TinyCausalLM:
    torch.manual_seed(seed)
    sizes = dict(vocab_size=50, dim=64, depth=2, num_heads=4, num_kv_heads=2)
    return TinyCausalLM(TextLMConfig(**{**sizes, **overrides})).eval()


def context_sensitive(model: TinyCausalLM) -> TinyCausalLM:
    """Large random weights, so that next-token choices depend on the whole context (a freshly
    initialised model mostly echoes its last token, and any cache bug would go unseen)."""
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if weight.ndim == 2:
                weight.normal_(std=0.3 if name.startswith("embed") else 2 / weight.shape[1] ** 0.5)
    return model


def prompt(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 50, (batch, length), generator=torch.Generator().manual_seed(seed))


LONG = {"original_max_position_embeddings": TRAINED}
STATIC_SCALINGS = {
    "none": None,
    "linear": {"rope_type": "linear", "factor": 4.0},
    "ntk": {"rope_type": "ntk", "factor": 4.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, **LONG},
    "llama3": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, **LONG},
}


@pytest.mark.parametrize("scaling", STATIC_SCALINGS.values(), ids=STATIC_SCALINGS.keys())
def test_generation_with_the_cache_equals_generation_without_it(scaling):
    model = context_sensitive(tiny_model(rope_scaling=scaling))
    # the prompt runs past the trained length, where scaling changes the angles
    start = prompt(3, 150)
    lengths_seen = []
    model.register_forward_pre_hook(lambda module, args: lengths_seen.append(args[0].shape[1]))
    with_cache = model.generate(start, 20, use_cache=True)
    assert lengths_seen == [150] + [1] * 19  # the prompt once, then one new token per step
    without = model.generate(start, 20, use_cache=False)
    assert with_cache.shape == (3, 170)
    assert torch.equal(with_cache[:, :150], start)
    assert torch.equal(with_cache, without)


def test_dynamic_generation_with_the_cache_equals_generation_without_it_within_the_trained_length():
    # beyond it, cached keys keep the angles of the length at which they entered (as in transformers)
    model = context_sensitive(tiny_model(rope_scaling={"rope_type": "dynamic", "factor": 4.0, **LONG}))
    start = prompt(3, TRAINED - 20)
    assert torch.equal(model.generate(start, 20, use_cache=True), model.generate(start, 20, use_cache=False))


def test_cached_logits_match_a_full_forward_pass():
    model = tiny_model()
    tokens = prompt(2, 40)
    full, _ = model(tokens)
    logits, caches = model(tokens[:, :25])
    steps = [logits]
    for i in range(25, 40):  # one token at a time through the cache
        logits, caches = model(tokens[:, i : i + 1], caches)
        steps.append(logits)
    assert caches[0].length == 40
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_dynamic_ntk_equals_no_scaling_up_to_the_training_length_and_not_beyond():
    plain = tiny_model()
    dynamic = tiny_model()
    dynamic.set_rope_scaling({"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": TRAINED})
    at_training_length = prompt(2, TRAINED)
    torch.testing.assert_close(dynamic(at_training_length)[0], plain(at_training_length)[0], atol=0, rtol=0)
    shorter = prompt(2, 37)
    torch.testing.assert_close(dynamic(shorter)[0], plain(shorter)[0], atol=0, rtol=0)
    longer = prompt(2, 2 * TRAINED)
    assert not torch.allclose(dynamic(longer)[0], plain(longer)[0], atol=1e-3)


def test_yarn_leaves_high_frequency_pairs_unscaled_and_divides_low_ones_by_the_factor():
    # At a 128-token training length even pair 0 turns only 128 / (2 pi) = 20 < beta_fast
    # times, so a Llama-like trained length shows both ends of YaRN's ramp.
    trained, factor, head_dim = 4096, 8.0, 16  # head_dim: dim 64 / 4 heads
    model = tiny_model()
    model.set_rope_scaling({"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": trained})
    default_freq, _ = rope_frequencies(head_dim, 10000.0)
    rotations = trained * default_freq / (2 * math.pi)  # turns of each pair within the trained length
    high, low = rotations > 32, rotations < 1  # YaRN's beta_fast and beta_slow
    assert high.sum() == 3 and low.sum() == 2
    mscale = 0.1 * math.log(factor) + 1  # YaRN's attention temperature, folded into the table
    positions = torch.arange(0, 8 * trained, 7)
    unscaled = positions[:, None].double() * default_freq
    for block in model.blocks:
        cos, sin = block.attn.rope(positions)  # (seq, pairs)
        for table, wave in ((cos, torch.cos), (sin, torch.sin)):
            table = table.double() / mscale
            torch.testing.assert_close(table[:, high], wave(unscaled[:, high]), atol=1e-5, rtol=0)
            torch.testing.assert_close(table[:, low], wave(unscaled[:, low] / factor), atol=1e-5, rtol=0)
            assert not torch.allclose(table[:, low], wave(unscaled[:, low]), atol=1e-2)


def test_set_rope_scaling_changes_every_layer_and_no_weight():
    model = tiny_model()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    tokens = prompt(1, 200)
    before, _ = model(tokens)
    model.set_rope_scaling({"rope_type": "linear", "factor": 2.0})
    assert model.rope_scaling == {"rope_type": "linear", "factor": 2.0}
    assert all(block.attn.rope.scalings[0].factor == 2.0 for block in model.blocks)
    assert all(torch.equal(v, weights[k]) for k, v in model.state_dict().items())
    assert not torch.allclose(model(tokens)[0], before, atol=1e-3)
    model.set_rope_scaling(None)
    torch.testing.assert_close(model(tokens)[0], before, atol=0, rtol=0)


def test_loss_is_log_vocab_for_a_model_that_predicts_uniformly():
    model = tiny_model()
    torch.nn.init.zeros_(model.final_norm.weight)  # every logit 0: uniform prediction
    assert model.loss(prompt(2, 30)).item() == pytest.approx(math.log(50), abs=1e-6)


@pytest.mark.parametrize(
    "tokens, error, match",
    [
        (torch.zeros(2, 5), TypeError, "int64 or int32"),
        (torch.zeros(5, dtype=torch.long), ValueError, r"shape \(batch, seq\)"),
        (torch.zeros(2, 0, dtype=torch.long), ValueError, "seq >= 1"),
        (torch.full((2, 5), 50), ValueError, r"ids in \[0, 50\)"),
        (torch.full((2, 5), -1), ValueError, r"ids in \[0, 50\)"),
        ([[1, 2, 3]], TypeError, "torch.Tensor"),
    ],
)
def test_bad_tokens_are_rejected_with_a_clear_error(tokens, error, match):
    model = tiny_model()
    with pytest.raises(error, match=match):
        model(tokens)
    with pytest.raises(error, match=match):
        model.generate(tokens, 3)


def test_bad_generation_and_cache_arguments_are_rejected():
    model = tiny_model()
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(prompt(1, 5), -1)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(prompt(1, 5), 2.0)
    _, caches = model(prompt(1, 5))
    with pytest.raises(ValueError, match="one per block"):
        model(prompt(1, 1), caches[:1])


@pytest.mark.parametrize(
    "overrides, error, match",
    [
        (dict(vocab_size=0), ValueError, "vocab_size must be a positive integer"),
        (dict(depth=2.0), TypeError, "depth must be an int"),
        (dict(dim=60, num_heads=8), ValueError, "divisible by num_heads"),
        (dict(num_kv_heads=3), ValueError, "divisible by num_kv_heads"),
        (dict(theta="big"), TypeError, "theta must be a real number"),
        (dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), ValueError, "original_max_position_embeddings"),
    ],
)
def test_bad_configs_are_rejected_with_a_clear_error(overrides, error, match):
    with pytest.raises(error, match=match):
        tiny_model(**overrides)


def test_bad_scalings_are_rejected_and_leave_the_model_as_it_was():
    model = tiny_model()
    with pytest.raises(ValueError, match="unknown rope_type"):
        model.set_rope_scaling({"rope_type": "stretchy", "factor": 2.0})
    with pytest.raises(ValueError, match="factor must be >= 1"):
        model.set_rope_scaling({"rope_type": "linear", "factor": 0.5})
    assert model.rope_scaling is None
    assert all(block.attn.rope.scalings == (None,) for block in model.blocks)
