"""Objectives: an oracle model has zero loss and its samples land on the data (checks the time convention)."""

from types import SimpleNamespace

import pytest
import torch

from axialrope.pipelines.objectives import (
    NUM_TRAIN_TIMESTEPS,
    EpsilonDDPM,
    FlowMatching,
    draw_noise,
    drop_labels,
    make_objective,
    sample,
    training_loss,
)


class Oracle(torch.nn.Module):
    """The exact prediction for data that is one point `x_star` (a delta distribution)."""

    def __init__(self, objective, x_star):
        super().__init__()
        self.objective, self.x_star = objective, x_star.double()
        self.seen_timesteps = []

    def forward(self, x, timestep, class_labels=None):
        self.seen_timesteps.append(timestep.detach().clone())
        x = x.double()
        t = timestep.double().view(-1, *[1] * (x.ndim - 1))
        if isinstance(self.objective, FlowMatching):
            sigma = t / NUM_TRAIN_TIMESTEPS  # x = (1 - sigma) x* + sigma noise  =>  v = noise - x* = (x - x*) / sigma
            out = (x - self.x_star) / sigma
        else:
            alpha_bar = self.objective.scheduler().alphas_cumprod.double()[timestep.long()].view_as(t)
            out = (x - alpha_bar.sqrt() * self.x_star) / (1 - alpha_bar).sqrt()
        return SimpleNamespace(sample=out.float())


@pytest.mark.parametrize("objective", [FlowMatching("logit_normal"), FlowMatching("uniform"), EpsilonDDPM()])
@pytest.mark.parametrize("shape", [(6, 3, 8, 8), (2, 3, 4, 8, 8)])
def test_oracle_has_zero_loss(objective, shape):
    x_star = torch.rand(shape[1:]) * 2 - 1
    oracle = Oracle(objective, x_star)
    generator = torch.Generator().manual_seed(0)
    loss = training_loss(oracle, objective, x_star.expand(shape).clone(), generator=generator)
    assert loss < 1e-8
    timesteps = oracle.seen_timesteps[0]
    assert timesteps.shape == (shape[0],) and (timesteps >= 0).all() and (timesteps <= NUM_TRAIN_TIMESTEPS).all()


@pytest.mark.parametrize("objective", [FlowMatching(), EpsilonDDPM()])
def test_sampling_with_the_oracle_reaches_the_data(objective):
    x_star = torch.rand(3, 8, 8) * 1.6 - 0.8
    noise = torch.randn(4, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    out = sample(Oracle(objective, x_star), objective, noise, num_steps=10, generator=torch.Generator().manual_seed(2))
    assert torch.allclose(out, x_star.expand_as(out), atol=2e-3)


def test_flow_noising_follows_the_diffusers_convention():
    x0, noise = torch.zeros(1000, 1), torch.ones(1000, 1)
    batch = FlowMatching("uniform").noise(x0, noise, torch.Generator().manual_seed(0))
    sigma = batch.timesteps / NUM_TRAIN_TIMESTEPS
    assert torch.allclose(batch.noisy[:, 0], sigma)  # sigma = 1 is pure noise
    assert torch.equal(batch.target, noise - x0)
    assert 0.45 < sigma.mean() < 0.55


def test_logit_normal_concentrates_on_the_middle():
    x = torch.zeros(4000, 1)
    sigma = FlowMatching("logit_normal").noise(x, x, torch.Generator().manual_seed(0)).timesteps / 1000
    assert ((sigma > 0.25) & (sigma < 0.75)).float().mean() > 0.6


def test_guidance_mixes_conditional_and_unconditional_predictions():
    class Biased(torch.nn.Module):
        def forward(self, x, t, class_labels=None):
            return SimpleNamespace(sample=torch.zeros_like(x) + (class_labels != 9).float().view(-1, 1, 1, 1))

    objective = FlowMatching()
    noise = torch.zeros(2, 1, 2, 2)
    labels = torch.tensor([0, 1])
    plain = sample(Biased(), objective, noise, labels, num_steps=4)
    guided = sample(Biased(), objective, noise, labels, num_steps=4, guidance_scale=3.0, null_class=9)
    # v = 1 conditionally, 0 unconditionally: guided v = 3; Euler from sigma 1 to 0 moves x by -v
    assert torch.allclose(plain, torch.full_like(plain, -1.0)) and torch.allclose(guided, torch.full_like(guided, -3.0))
    with pytest.raises(ValueError, match="null_class"):
        sample(Biased(), objective, noise, labels, guidance_scale=2.0)


def test_label_dropout_rate_and_bad_names():
    labels = torch.zeros(10000, dtype=torch.long)
    dropped = drop_labels(labels, 0.1, null_class=6, generator=torch.Generator().manual_seed(0))
    assert set(dropped.unique().tolist()) == {0, 6}
    assert 0.08 < (dropped == 6).float().mean() < 0.12
    with pytest.raises(ValueError, match="objective"):
        make_objective("edm")
    with pytest.raises(ValueError, match="timestep_sampling"):
        FlowMatching("cosine")


def _frame_correlation(noise: torch.Tensor) -> float:
    """Pearson correlation between the first and the last frame of (b, c, t, h, w) noise."""
    first, last = noise[:, :, 0].flatten(), noise[:, :, -1].flatten()
    return float(torch.corrcoef(torch.stack([first, last]))[0, 1])


@pytest.mark.parametrize("rho", [0.25, 0.5, 0.8])
def test_frame_correlated_noise_is_standard_normal_with_the_asked_correlation(rho):
    noise = draw_noise((32, 3, 4, 16, 16), rho, torch.Generator().manual_seed(0))
    assert abs(float(noise.mean())) < 0.02 and abs(float(noise.var()) - 1) < 0.02
    assert abs(_frame_correlation(noise) - rho) < 0.03


def test_uncorrelated_noise_is_plain_randn_and_images_take_no_correlation():
    shape = (2, 3, 4, 8, 8)
    assert torch.equal(
        draw_noise(shape, 0.0, torch.Generator().manual_seed(3)),
        torch.randn(shape, generator=torch.Generator().manual_seed(3)),
    )
    with pytest.raises(ValueError, match="needs a video shape"):
        draw_noise((2, 3, 8, 8), 0.5)


def test_the_training_loss_noises_frames_with_the_asked_correlation():
    class Recorder(torch.nn.Module):  # sees noisy = sigma * noise for zero data
        def forward(self, x, timestep, class_labels=None):
            self.noise = x / (timestep / NUM_TRAIN_TIMESTEPS).view(-1, 1, 1, 1, 1)
            return SimpleNamespace(sample=torch.zeros_like(x))

    for rho in (0.0, 0.7):
        recorder = Recorder()
        training_loss(
            recorder,
            FlowMatching(),
            torch.zeros(32, 3, 4, 16, 16),
            generator=torch.Generator().manual_seed(0),
            frame_noise_correlation=rho,
        )
        assert abs(_frame_correlation(recorder.noise) - rho) < 0.03
