"""Training objectives and the matching diffusers samplers.

Rectified flow (flow matching, as SD3 and Flux), the default. Time convention: diffusers'
flow-matching sigma in [0, 1], with sigma = 1 pure noise and sigma = 0 data:

    x_sigma = (1 - sigma) * x0 + sigma * noise,   target v = dx/dsigma = noise - x0,

and the model sees timestep = 1000 * sigma, the scale of `FlowMatchEulerDiscreteScheduler`,
whose Euler step x <- x + (sigma_next - sigma) * v samples from it.

DDPM epsilon prediction (DiT's objective): integer t in [0, 1000), x_t from
`DDPMScheduler.add_noise` (linear betas 1e-4 .. 0.02), target the noise; sampled with
`DDPMScheduler` on a shortened schedule.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler, FlowMatchEulerDiscreteScheduler

from .limits import check_guidance_scale

NUM_TRAIN_TIMESTEPS = 1000


@dataclass
class NoisedBatch:
    """What the model is trained on: it sees `noisy` at `timesteps` and should output `target`."""

    noisy: torch.Tensor  # (b, c, ...) like the data
    timesteps: torch.Tensor  # (b,) float, diffusers scale 0 .. 1000
    target: torch.Tensor  # (b, c, ...)


def draw_noise(
    shape: tuple[int, ...],
    frame_correlation: float = 0.0,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Standard normal noise (b, c, h, w) or (b, c, t, h, w), its frames correlated for video.

    Each element is still N(0, 1), but for video a share `frame_correlation` of its variance
    is one draw common to all frames (PYoCo's mixed noise prior):

        noise = sqrt(rho) * shared (b, c, 1, h, w) + sqrt(1 - rho) * independent (b, c, t, h, w),

    so any two frames correlate by rho. A model trained on such noise starts every frame of a
    sample from partly the same noise, which holds a shape's form together across the frames.
    rho = 0 is plain `torch.randn` (the same numbers for the same generator).
    """
    if not frame_correlation:
        return torch.randn(shape, generator=generator, device=device, dtype=dtype)
    if len(shape) != 5:
        raise ValueError(f"frame_correlation={frame_correlation} needs a video shape (b, c, t, h, w), got {shape}")
    b, c, _, h, w = shape
    shared = torch.randn((b, c, 1, h, w), generator=generator, device=device, dtype=dtype)
    independent = torch.randn(shape, generator=generator, device=device, dtype=dtype)
    return math.sqrt(frame_correlation) * shared + math.sqrt(1 - frame_correlation) * independent


def _per_sample(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(b,) -> (b, 1, ..., 1) broadcastable against `like`."""
    return values.view(-1, *[1] * (like.ndim - 1)).to(like.dtype)


class FlowMatching:
    """Rectified flow with a velocity target; sigma drawn logit-normal (SD3) or uniform.

    Args:
        timestep_sampling: "logit_normal" (sigmoid of a standard normal: more weight on
            the middle of the path) or "uniform".
    """

    name = "flow"

    def __init__(self, timestep_sampling: str = "logit_normal"):
        if timestep_sampling not in ("logit_normal", "uniform"):
            raise ValueError(f"timestep_sampling must be 'logit_normal' or 'uniform', got {timestep_sampling!r}")
        self.timestep_sampling = timestep_sampling

    def noise(self, x0: torch.Tensor, noise: torch.Tensor, generator: torch.Generator | None = None) -> NoisedBatch:
        """Noise clean data x0 (b, c, ...) with `noise` of its shape at random sigmas."""
        batch = x0.shape[0]
        if self.timestep_sampling == "logit_normal":
            sigma = torch.sigmoid(torch.randn(batch, generator=generator, device=x0.device))
        else:
            sigma = torch.rand(batch, generator=generator, device=x0.device)
        s = _per_sample(sigma, x0)
        return NoisedBatch(noisy=(1 - s) * x0 + s * noise, timesteps=sigma * NUM_TRAIN_TIMESTEPS, target=noise - x0)

    def scheduler(self) -> FlowMatchEulerDiscreteScheduler:
        return FlowMatchEulerDiscreteScheduler(num_train_timesteps=NUM_TRAIN_TIMESTEPS, shift=1.0)


class EpsilonDDPM:
    """DDPM with a noise (epsilon) target, uniform integer timesteps."""

    name = "ddpm"

    def __init__(self):
        self._scheduler = self.scheduler()

    def noise(self, x0: torch.Tensor, noise: torch.Tensor, generator: torch.Generator | None = None) -> NoisedBatch:
        """Noise clean data x0 (b, c, ...) with `noise` of its shape at random timesteps."""
        t = torch.randint(NUM_TRAIN_TIMESTEPS, (x0.shape[0],), generator=generator, device=x0.device)
        noisy = self._scheduler.add_noise(x0, noise, t)
        return NoisedBatch(noisy=noisy, timesteps=t.float(), target=noise)

    def scheduler(self) -> DDPMScheduler:
        return DDPMScheduler(num_train_timesteps=NUM_TRAIN_TIMESTEPS, beta_schedule="linear", prediction_type="epsilon")


def make_objective(name: str, timestep_sampling: str = "logit_normal") -> FlowMatching | EpsilonDDPM:
    """The objective called `name` ("flow" or "ddpm")."""
    if name == "flow":
        return FlowMatching(timestep_sampling)
    if name == "ddpm":
        return EpsilonDDPM()
    raise ValueError(f"objective must be 'flow' or 'ddpm', got {name!r}")


def drop_labels(
    labels: torch.Tensor, probability: float, null_class: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Replace each label by `null_class` with `probability` (trains the unconditional branch for guidance)."""
    drop = torch.rand(labels.shape, generator=generator, device=labels.device) < probability
    return torch.where(drop, torch.full_like(labels, null_class), labels)


def training_loss(
    model: torch.nn.Module,
    objective: FlowMatching | EpsilonDDPM,
    x0: torch.Tensor,
    class_labels: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
    frame_noise_correlation: float = 0.0,
) -> torch.Tensor:
    """Mean squared error between the model's prediction and the objective's target, in float32.

    Args:
        x0: (b, c, h, w) or (b, c, t, h, w) clean data in [-1, 1].
        class_labels: (b,) long, or None for an unconditional model.
        generator: draws the noise and the timesteps (seeded per step for exact resumes).
        frame_noise_correlation: video only, see `draw_noise` (the model's config holds it).

    Returns:
        scalar loss.
    """
    noise = draw_noise(tuple(x0.shape), frame_noise_correlation, generator, x0.device, x0.dtype)
    batch = objective.noise(x0, noise, generator)
    prediction = model(batch.noisy, batch.timesteps, class_labels=class_labels).sample
    return F.mse_loss(prediction.float(), batch.target.float())


def scheduler_step_kwargs(scheduler, generator: torch.Generator | None) -> dict:
    """`generator=generator` for a scheduler whose `step` draws noise (DDPM, stochastic flow), else nothing
    (UniPC's `step` takes no generator)."""
    return {"generator": generator} if "generator" in inspect.signature(scheduler.step).parameters else {}


def initial_noise_sigma(scheduler) -> float:
    """What standard normal noise is multiplied by to start sampling: DDPM's init_noise_sigma (1.0); flow matching's
    schedulers have none and start at sigma = 1."""
    return getattr(scheduler, "init_noise_sigma", 1.0)


def scaled_model_input(scheduler, x: torch.Tensor, timestep: torch.Tensor) -> torch.Tensor:
    """`scheduler.scale_model_input(x, timestep)` where the scheduler has one (Euler's DDPM variant divides by
    sqrt(sigma^2 + 1)); flow matching's schedulers have none: x itself."""
    scale_input = getattr(scheduler, "scale_model_input", None)
    return x if scale_input is None else scale_input(x, timestep)


def guided_prediction(
    model: torch.nn.Module,
    x: torch.Tensor,
    timestep: torch.Tensor,
    class_labels: torch.Tensor | None,
    guidance_scale: float = 1.0,
    null_class: int | None = None,
) -> torch.Tensor:
    """The model's prediction for x (b, c, ...) at the scalar `timestep`, in float32 (the model runs in its own dtype).

    With guidance_scale != 1, classifier-free guidance in one batch of 2b: free + g (conditioned - free), the free
    prediction taking `null_class` for every label.
    """
    model_dtype = getattr(model, "dtype", torch.float32)  # diffusers models have one; plain modules run in float32
    timesteps = timestep.expand(x.shape[0]).to(x.device)
    if guidance_scale == 1.0:
        return model(x.to(model_dtype), timesteps, class_labels=class_labels).sample.float()
    unconditional = torch.full_like(class_labels, null_class)
    both = model(
        torch.cat([x, x]).to(model_dtype),
        torch.cat([timesteps, timesteps]),
        class_labels=torch.cat([class_labels, unconditional]),
    ).sample
    conditioned, free = both.float().chunk(2)
    return free + guidance_scale * (conditioned - free)


@torch.no_grad()
def sample(
    model: torch.nn.Module,
    objective: FlowMatching | EpsilonDDPM | None,
    noise: torch.Tensor,
    class_labels: torch.Tensor | None = None,
    num_steps: int = 30,
    guidance_scale: float = 1.0,
    null_class: int | None = None,
    generator: torch.Generator | None = None,
    scheduler=None,
) -> torch.Tensor:
    """Draw samples from noise (b, c, ...) with a diffusers scheduler: the training code's final samples.

    Args:
        objective: its scheduler samples, unless `scheduler` (whose timesteps are set here) is given.
        noise: standard normal, the shape of the samples.
        class_labels: (b,) long or None.
        guidance_scale: classifier-free guidance (`guided_prediction`); != 1 needs labels and `null_class`.
        generator: for stochastic schedulers (DDPM).

    Returns:
        (b, c, ...) float32 samples, nominally in [-1, 1]. `AxialDiTPipeline.__call__` runs the same
        loop with the pipeline's extras (RoPE plan per step, callbacks, progress bar).
    """
    check_guidance_scale(guidance_scale)
    if guidance_scale != 1.0 and (class_labels is None or null_class is None):
        raise ValueError("guidance_scale != 1 needs class_labels and the model's null_class")
    scheduler = objective.scheduler() if scheduler is None else scheduler
    scheduler.set_timesteps(num_steps, device=noise.device)
    x = noise.float() * initial_noise_sigma(scheduler)
    step_kwargs = scheduler_step_kwargs(scheduler, generator)
    for t in scheduler.timesteps:
        prediction = guided_prediction(
            model, scaled_model_input(scheduler, x, t), t, class_labels, guidance_scale, null_class
        )
        x = scheduler.step(prediction, t, x, **step_kwargs).prev_sample
    return x
