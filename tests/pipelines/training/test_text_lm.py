"""Training loop, checkpoints and the two scores of the context-extension benchmark."""

import math
import random

import pytest
import torch

from axialrope.models import TextLMConfig, TinyCausalLM
from axialrope.pipelines.data.text import SyntheticLanguage
from axialrope.pipelines.evaluation.text_lm import passkey_accuracy, perplexity
from axialrope.pipelines.training.text_lm import load_checkpoint, save_checkpoint, train_lm, warmup_cosine

LANGUAGE = SyntheticLanguage(n_words=16)


def tiny_model(**overrides) -> TinyCausalLM:
    torch.manual_seed(0)
    sizes = dict(vocab_size=LANGUAGE.vocab_size, dim=32, depth=1, num_heads=2, num_kv_heads=1)
    return TinyCausalLM(TextLMConfig(**{**sizes, **overrides})).eval()


def test_training_lowers_the_loss():
    model = tiny_model()
    rng = random.Random(0)
    losses = train_lm(model, lambda step: LANGUAGE.training_batch(8, 32, rng), steps=40, lr=1e-2, warmup=5)
    assert len(losses) == 40 and not model.training
    assert sum(losses[-5:]) / 5 < losses[0] - 0.5


def test_the_schedule_warms_up_then_decays_to_a_tenth():
    assert warmup_cosine(0, 100, 10) == pytest.approx(0.1)
    assert warmup_cosine(9, 100, 10) == pytest.approx(1.0)
    assert warmup_cosine(10, 100, 10) == pytest.approx(1.0)
    assert warmup_cosine(100, 100, 10) == pytest.approx(0.1)


def learning_rates(monkeypatch, **kwargs) -> list[float]:
    """The rate of every optimizer step of a 20-step run with lr 1."""
    seen = []
    step = torch.optim.AdamW.step
    monkeypatch.setattr(
        torch.optim.AdamW,
        "step",
        lambda self, *a, **k: (seen.append(self.param_groups[0]["lr"]), step(self, *a, **k))[1],
    )
    train_lm(tiny_model(), lambda step: LANGUAGE.training_batch(2, 16, random.Random(step)), steps=20, lr=1.0, **kwargs)
    return seen


def test_the_default_schedule_is_warmup_cosine(monkeypatch):
    assert learning_rates(monkeypatch, warmup=4) == pytest.approx([warmup_cosine(s, 20, 4) for s in range(20)])


def test_the_dit_loops_schedules_come_from_diffusers(monkeypatch):
    seen = learning_rates(monkeypatch, warmup=4, lr_scheduler="cosine")
    assert seen[:5] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])  # diffusers' linear warm-up from 0
    assert seen[12] == pytest.approx(0.5 * (1 + math.cos(math.pi * 8 / 16)))
    assert seen[-1] == pytest.approx(0.5 * (1 + math.cos(math.pi * 15 / 16)))  # on its way to 0 at step 20


def test_an_unknown_schedule_is_refused_before_training():
    with pytest.raises(ValueError, match="lr_scheduler must be one of"):
        train_lm(tiny_model(), lambda step: None, steps=1, lr_scheduler="warmup_cosine")


def test_a_checkpoint_round_trips_weights_config_and_metadata(tmp_path):
    model = tiny_model(rope_scaling={"rope_type": "linear", "factor": 2.0})
    path = tmp_path / "sub" / "model.safetensors"
    save_checkpoint(model, path, metadata={"steps": 3})
    assert [p.name for p in path.parent.iterdir()] == ["model.safetensors"]  # no temporary left
    loaded, metadata = load_checkpoint(path)
    assert metadata == {"steps": 3}
    assert loaded.config == model.config
    tokens = LANGUAGE.language_batch(2, 20, random.Random(0))
    torch.testing.assert_close(loaded(tokens)[0], model(tokens)[0], atol=0, rtol=0)


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size():
    model = tiny_model()
    torch.nn.init.zeros_(model.final_norm.weight)  # every logit 0
    tokens = LANGUAGE.language_batch(3, 20, random.Random(0))
    assert perplexity(model, tokens, batch_size=2) == pytest.approx(LANGUAGE.vocab_size, rel=1e-6)


class Parrot(torch.nn.Module):
    """Stands in for a model: 'generates' the answers it was told, or zeros."""

    def __init__(self, answers):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.answers = answers

    def generate(self, prompt, max_new_tokens):
        rows = self.answers[: len(prompt)]
        self.answers = self.answers[len(prompt) :]
        return torch.cat((prompt, rows), dim=1)


def test_passkey_accuracy_counts_a_row_only_if_every_digit_is_right():
    sequences = LANGUAGE.passkey_batch(6, 40, random.Random(0), n_digits=5)
    answers = sequences[:, -5:].clone()
    answers[1, 4] += 1  # one digit wrong
    answers[4, 0] += 1
    assert passkey_accuracy(Parrot(answers), sequences, n_digits=5, batch_size=4) == pytest.approx(4 / 6)


def test_bad_batches_are_rejected():
    model = tiny_model()
    with pytest.raises(ValueError, match=r"\(n, length\)"):
        perplexity(model, torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="at least 6 columns"):
        passkey_accuracy(model, torch.zeros(2, 5, dtype=torch.long), n_digits=5)
    with pytest.raises(ValueError, match="steps"):
        train_lm(model, lambda step: None, steps=-1)
    assert math.isfinite(perplexity(model, LANGUAGE.language_batch(1, 2, random.Random(0))))
