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
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from diffusers import DDPMScheduler, FlowMatchEulerDiscreteScheduler

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
        return DDPMScheduler(
            num_train_timesteps=NUM_TRAIN_TIMESTEPS, beta_schedule="linear", prediction_type="epsilon"
        )


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


@torch.no_grad()
def sample(
    model: torch.nn.Module,
    objective: FlowMatching | EpsilonDDPM,
    noise: torch.Tensor,
    class_labels: torch.Tensor | None = None,
    num_steps: int = 30,
    guidance_scale: float = 1.0,
    null_class: int | None = None,
    generator: torch.Generator | None = None,
    scheduler=None,
    on_step: Callable[[int, float], None] | None = None,
    on_step_end: Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor | None] | None = None,
) -> torch.Tensor:
    """Draw samples from noise with a diffusers scheduler (the objective's unless one is given).

    Args:
        noise: (b, c, ...) standard normal, the shape of the samples.
        class_labels: (b,) long or None.
        guidance_scale: classifier-free guidance; above 1 needs labels and `null_class`.
        generator: for stochastic schedulers (DDPM); passed to `scheduler.step` only where
            its signature takes one (UniPC's does not).
        scheduler: a diffusers scheduler to use instead of `objective.scheduler()` (then
            `objective` may be None); its timesteps are set here. Each step follows diffusers'
            contract: `scale_model_input` (where the scheduler has it: Euler's DDPM variant
            divides by sqrt(sigma^2 + 1)), the model, then `step`.
        on_step: called before each model call with (step index, time in [0, 1]), the time
            being timestep / num_train_timesteps: flow matching's sigma, 1 = pure noise.
            A pipeline uses it to change the model's RoPE settings per step.
        on_step_end: called after each scheduler step with (step index, timestep, x), x the
            sampler state (b, c, ...) in float32; a tensor it returns replaces x (diffusers'
            callback_on_step_end).

    Returns:
        (b, c, ...) samples in float32, nominally in [-1, 1]. The model runs in its own
        dtype (e.g. bf16); the sampler state stays float32.
    """
    if not math.isfinite(guidance_scale) or guidance_scale < 0:  # negative guidance pushes towards the unconditional
        raise ValueError(f"guidance_scale must be a finite number >= 0 (1: no guidance), got {guidance_scale!r}")
    if guidance_scale != 1.0 and (class_labels is None or null_class is None):
        raise ValueError("guidance_scale != 1 needs class_labels and the model's null_class")
    scheduler = objective.scheduler() if scheduler is None else scheduler
    scheduler.set_timesteps(num_steps, device=noise.device)
    model_dtype = getattr(model, "dtype", torch.float32)  # diffusers models have one; plain modules run in float32
    total_time = scheduler.config.num_train_timesteps
    # DDPM has one (1.0); flow matching starts at sigma = 1
    x = noise.float() * getattr(scheduler, "init_noise_sigma", 1.0)
    scale_input = getattr(scheduler, "scale_model_input", None)  # flow matching's schedulers have none
    step_kwargs = {"generator": generator} if "generator" in inspect.signature(scheduler.step).parameters else {}
    for index, t in enumerate(scheduler.timesteps):
        if on_step is not None:
            on_step(index, float(t) / total_time)
        timesteps = t.expand(x.shape[0]).to(x.device)
        x_in = x if scale_input is None else scale_input(x, t)
        if guidance_scale == 1.0:
            prediction = model(x_in.to(model_dtype), timesteps, class_labels=class_labels).sample
        else:
            unconditional = torch.full_like(class_labels, null_class)
            both = model(
                torch.cat([x_in, x_in]).to(model_dtype), torch.cat([timesteps, timesteps]),
                class_labels=torch.cat([class_labels, unconditional]),
            ).sample
            conditioned, free = both.float().chunk(2)
            prediction = free + guidance_scale * (conditioned - free)
        x = scheduler.step(prediction.float(), t, x, **step_kwargs).prev_sample
        if on_step_end is not None:
            replaced = on_step_end(index, t, x)
            x = x if replaced is None else replaced
    return x
