"""Every diffusers scheduler that fits an objective samples it, following diffusers' step contract.

The exact tests use an oracle: for data that is one point x0, the ideal flow-matching model is
v(x, sigma) = (x - x0) / sigma and the ideal epsilon model is eps(x_t, t) = (x_t - sqrt(abar_t) x0)
/ sqrt(1 - abar_t). Any correct sampler lands on x0; one that skips `scale_model_input` (Euler on
DDPM feeds the model x scaled by sqrt(sigma^2 + 1)) lands far off.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from diffusers import DDIMScheduler, FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler

from axialrope.models import create_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.dit.schedulers import SCHEDULERS, make_scheduler, scheduler_name
from axialrope.pipelines.objectives import make_objective, sample

CASES = [(objective, name) for objective, names in SCHEDULERS.items() for name in names]


class Oracle(torch.nn.Module):
    """The ideal model for data that is the single point `x0` (same shape as the samples)."""

    def __init__(self, x0: torch.Tensor, objective: str):
        super().__init__()
        self.x0, self.objective = x0, objective
        alphas_cumprod = make_objective("ddpm").scheduler().alphas_cumprod.double()
        self.sigmas = ((1 - alphas_cumprod) / alphas_cumprod).sqrt().numpy()  # VE sigma per integer timestep

    def forward(self, x, timesteps, class_labels=None):
        t = float(timesteps[0])
        if self.objective == "flow":
            out = (x - self.x0) / (t / 1000)
        else:  # Euler's timesteps are fractional: sigma interpolated linearly in t, as diffusers does
            sigma = float(np.interp(t, np.arange(len(self.sigmas)), self.sigmas))
            alpha_bar = 1 / (1 + sigma**2)
            out = (x - alpha_bar**0.5 * self.x0) / (1 - alpha_bar) ** 0.5
        return type("Output", (), {"sample": out})


@pytest.mark.parametrize("objective, name", CASES, ids=[f"{o}-{n}" for o, n in CASES])
def test_each_scheduler_lands_on_the_data_of_an_ideal_model(objective, name):
    generator = torch.Generator().manual_seed(0)
    x0 = torch.rand(2, 3, 4, 4, generator=generator) * 2 - 1
    noise = torch.randn(2, 3, 4, 4, generator=generator)
    scheduler = make_scheduler(name, make_objective(objective).scheduler())
    samples = sample(
        Oracle(x0, objective), None, noise, num_steps=4, scheduler=scheduler, generator=torch.Generator().manual_seed(1)
    )
    # flow-mode DPM-Solver++ / UniPC round their timesteps to integers, so the model sees sigma off by < 1/1000
    torch.testing.assert_close(samples, x0, atol=1e-2, rtol=0)


@pytest.fixture(scope="module")
def model(randomised):
    return randomised(create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=2))


@pytest.mark.parametrize("objective, name", CASES, ids=[f"{o}-{n}" for o, n in CASES])
def test_the_pipeline_samples_with_each_scheduler_by_name(model, objective, name):
    pipe = AxialDiTPipeline.from_model(model, objective)
    pipe.set_progress_bar_config(disable=True)
    calls = []
    handle = model.register_forward_pre_hook(lambda module, args: calls.append(1))
    try:
        images = pipe(
            class_labels=[0, 1],
            num_inference_steps=3,
            guidance_scale=2.0,
            scheduler=name,
            generator=torch.Generator().manual_seed(0),
            output_type="pt",
        ).images
    finally:
        handle.remove()
    assert images.shape == (2, 3, 8, 8) and torch.isfinite(images).all()
    assert len(calls) == (5 if name == "heun" and objective == "flow" else 3)  # Heun: two calls a step but the first
    assert type(pipe.scheduler) is type(make_objective(objective).scheduler())  # the pipeline's own is untouched


def test_a_named_scheduler_of_the_pipelines_own_class_is_the_same_sampler(model):
    pipe = AxialDiTPipeline.from_model(model, "flow")
    pipe.set_progress_bar_config(disable=True)
    kwargs = dict(class_labels=[1], num_inference_steps=3, output_type="pt")
    plain = pipe(generator=torch.Generator().manual_seed(0), **kwargs).images
    named = pipe(
        generator=torch.Generator().manual_seed(0), scheduler="FlowMatchEulerDiscreteScheduler", **kwargs
    ).images
    assert torch.equal(plain, named)
    assert scheduler_name(pipe.scheduler) == "euler"


def test_a_folder_that_does_not_record_its_objective_gets_it_from_its_scheduler(model, tmp_path):
    from axialrope.pipelines.dit.bundled import bundled_model_path

    assert "objective" not in (bundled_model_path("shapes-rope") / "model_index.json").read_text()
    assert AxialDiTPipeline.from_pretrained(bundled_model_path("shapes-rope")).config.objective == "flow"
    AxialDiTPipeline.from_model(model, "ddpm").save_pretrained(tmp_path)
    assert AxialDiTPipeline.from_pretrained(tmp_path).config.objective == "ddpm"  # saved from now on


def test_named_schedulers_keep_the_pipelines_noise_schedule():
    base = make_objective("ddpm").scheduler()
    base = type(base).from_config(base.config, beta_end=0.03)
    assert make_scheduler("ddim", base).config.beta_end == 0.03
    flow = FlowMatchEulerDiscreteScheduler(shift=3.0)
    unipc = make_scheduler("unipc", flow)
    assert unipc.config.flow_shift == 3.0 and unipc.config.use_flow_sigmas
    assert unipc.config.prediction_type == "flow_prediction"


@pytest.mark.parametrize(
    "objective, name, message",
    [
        ("flow", "ddim", "'ddim' samples DDPM"),
        ("flow", "ddpm", "'ddpm' samples DDPM"),
        ("ddpm", "heun", "'heun' samples flow-matching"),
        ("flow", "lms", "unknown scheduler 'lms'"),
    ],
)
def test_an_unknown_or_unfitting_scheduler_name_lists_the_valid_ones(model, objective, name, message):
    pipe = AxialDiTPipeline.from_model(model, objective)
    valid = "euler (FlowMatchEulerDiscreteScheduler), heun" if objective == "flow" else "ddpm (DDPMScheduler), ddim"
    with pytest.raises(ValueError, match=rf"{message}.*choose one of {re.escape(valid)}") as caught:
        pipe(class_labels=[0], num_inference_steps=1, scheduler=name)
    assert "dpm++" in str(caught.value) and "unipc" in str(caught.value)


def test_a_scheduler_instance_that_does_not_fit_the_objective_is_refused(model):
    pipe = AxialDiTPipeline.from_model(model, "flow")
    with pytest.raises(ValueError, match="DDIMScheduler samples DDPM"):
        pipe(class_labels=[0], num_inference_steps=1, scheduler=DDIMScheduler())
    pipe.scheduler = DDIMScheduler.from_config(pipe.scheduler.config)  # diffusers' way to swap one in
    with pytest.raises(ValueError, match="this is a flow-matching model"):
        pipe(class_labels=[0], num_inference_steps=1)
    flow_unipc = UniPCMultistepScheduler(use_flow_sigmas=True, prediction_type="flow_prediction")
    pipe.scheduler = flow_unipc  # one that fits: accepted
    pipe.set_progress_bar_config(disable=True)
    assert pipe(class_labels=[0], num_inference_steps=2, output_type="pt").images.shape == (1, 3, 8, 8)
