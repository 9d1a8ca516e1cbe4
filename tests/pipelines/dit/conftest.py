"""Shared by the sampling tests: DiTs whose every weight is perturbed, so that outputs depend on them."""

import pytest
import torch


def _randomised(model):
    """DiT's init zeroes the output layer (the output would not depend on anything): perturb every weight."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


@pytest.fixture(scope="session")
def randomised():
    """`randomised(model)` perturbs every weight of `model` in place (seed 0) and returns it in eval mode."""
    return _randomised
