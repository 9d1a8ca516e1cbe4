"""Shared fixtures for the model tests: tiny models with weights moved off their zero init."""

import pytest
import torch

from axialrope.models import create_dit


def _perturb(model, seed=0, std=0.05):
    """adaLN-Zero and the zero output layer make a fresh DiT output exactly 0 and stop the
    gradient of most weights; tests of outputs and gradients first add noise to every weight."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=generator, dtype=p.dtype) * std)
    return model


@pytest.fixture
def perturb():
    return _perturb


@pytest.fixture
def make_model():
    """make_model(**overrides) -> a perturbed tiny DiT in eval mode (3 channels, 4 classes)."""

    def make(seed=0, **overrides):
        torch.manual_seed(seed)
        kwargs = dict(sample_size=8, in_channels=3, num_classes=4)
        kwargs.update(overrides)
        return _perturb(create_dit("tiny", **kwargs), seed).eval()

    return make
