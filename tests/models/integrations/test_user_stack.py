"""A patched model in the stack a diffusers user adds around it (issue 36), on tiny configs of Flux (its real
FluxPipeline and FluxImg2ImgPipeline), Wan, Qwen-Image and Z-Image, dype-yarn at twice the trained grid:
torch.compile over a sampler's whole schedule (graph breaks and compilations counted against the untouched
model), inference_mode, copies and pickles, Flux's shift cap in every pipeline and through scheduler swaps,
batches whose samples are at different diffusion times, and the rows that already worked (casting, LoRA,
cache hooks, group offloading, save and reload, gradients)."""

import copy
import pickle

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline
from torch._dynamo.utils import counters

from axialrope.models import apply_extrapolation

STACK = ("flux", "wan", "qwen-image", "z-image")
STEPS = 28  # a sampler's whole schedule: DyPE's plan changes at every one of its timesteps


def sampler_timesteps(family, steps: int = STEPS) -> list[float]:
    """The transformer's timestep argument at each step of a flow-matching schedule (shift 3, as Wan's)."""
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    scheduler.set_timesteps(steps)
    return [family.time.timestep_at(sigma) for sigma in scheduler.sigmas[:-1].tolist()]


def compiled_schedule(tiny, model, spec, grid, timesteps, backend="eager"):
    """(outputs at every step, graph breaks, frames compiled by the first step, frames compiled in all) of
    `torch.compile(model)` over the timesteps."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend=backend)
    outputs, first = [], None
    for timestep in timesteps:
        outputs.append(tiny.run(compiled, spec, grid, timestep))
        first = counters["frames"]["total"] if first is None else first
    breaks = sum(counters["graph_break"].values())
    return outputs, breaks, first, counters["frames"]["total"]


def patched(spec, method="dype-yarn"):
    model = spec.make()
    apply_extrapolation(model, method, trained_grid=spec.trained)
    return model


# -- torch.compile ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [1, 2])
@pytest.mark.parametrize("name", STACK)
def test_a_compiled_patched_model_samples_a_whole_schedule_without_breaks_or_recompiles(tiny, name, factor):
    """The plan's numbers never reach the graph (the rope is one opaque operator, the call plan runs outside
    it): no more graph breaks or compiled frames than the untouched model, none after the first step, and
    the eager model's outputs (dynamo's eager backend runs the traced graph as it is)."""
    spec, family = tiny.TINY[name], tiny.FAMILY[name]
    grid, timesteps = tuple(factor * n for n in spec.trained), sampler_timesteps(family)
    timesteps = timesteps if factor > 1 else timesteps[::9]  # within the trained grid no time is read
    _, plain_breaks, _, plain_frames = compiled_schedule(tiny, spec.make(), spec, grid, timesteps)
    model = patched(spec)
    outputs, breaks, first, frames = compiled_schedule(tiny, model, spec, grid, timesteps)
    assert breaks <= plain_breaks and frames <= plain_frames
    assert frames == first  # nothing recompiled over the schedule
    for step in (0, len(timesteps) // 2, -1):
        assert torch.equal(outputs[step], tiny.run(model, spec, grid, timesteps[step]))


@pytest.mark.slow
@pytest.mark.parametrize("name", STACK)
def test_inductor_compiles_a_patched_model_once_per_size(tiny, name):
    spec, family = tiny.TINY[name], tiny.FAMILY[name]
    grid, timesteps = tuple(2 * n for n in spec.trained), sampler_timesteps(family)[::4]
    model = patched(spec)
    outputs, _, first, frames = compiled_schedule(tiny, model, spec, grid, timesteps, backend="inductor")
    assert frames == first
    for output, timestep in zip(outputs, timesteps, strict=True):
        torch.testing.assert_close(output, tiny.run(model, spec, grid, timestep), rtol=1e-5, atol=1e-5)


# -- inference_mode, copies, pickles ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["wan", "qwen-image", "z-image"])
def test_a_patched_model_runs_under_inference_mode_beyond_its_grid(tiny, name):
    spec = tiny.TINY[name]
    model = patched(spec)
    grid, timestep = tuple(2 * n for n in spec.trained), 0.7 * tiny.FAMILY[name].time.at_noise
    expected = tiny.run(model, spec, grid, timestep)
    with torch.inference_mode():
        assert torch.equal(tiny.run(model, spec, grid, timestep), expected)
        assert torch.equal(tiny.run(model, spec, grid, timestep), expected)


@pytest.mark.parametrize("name", STACK)
def test_a_pickled_patched_model_is_patched_as_its_original(tiny, name):
    spec = tiny.TINY[name]
    model = patched(spec)
    grid, timestep = tuple(2 * n for n in spec.trained), 0.4 * tiny.FAMILY[name].time.at_noise
    expected = tiny.run(model, spec, grid, timestep)
    loaded = pickle.loads(pickle.dumps(model))
    assert torch.equal(tiny.run(loaded, spec, grid, timestep), expected)
    loaded._axialrope_extrapolation.remove()
    assert torch.equal(tiny.run(loaded, spec, grid, timestep), tiny.run(spec.make(), spec, grid, timestep))


# -- the real FluxPipeline -----------------------------------------------------------------------------------


@pytest.fixture
def flux_pipe(tiny_flux_folder):
    pipe = FluxPipeline.from_pretrained(tiny_flux_folder)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def text_to_image(pipe, size: int):
    """A 3-step tiny sample of size x size px (the trained grid, 8 x 8 tokens, is 16 px)."""
    return pipe(
        "a cat",
        height=size,
        width=size,
        num_inference_steps=3,
        max_sequence_length=8,
        generator=torch.Generator().manual_seed(0),
        output_type="pt",
    ).images


def schedule_of(pipe, call) -> list[float]:
    """The timesteps the transformer is called with during `call()`."""
    seen = []
    hook = pipe.transformer.register_forward_pre_hook(
        lambda m, a, kw: seen.append(float(kw["timestep"][0])), with_kwargs=True
    )
    try:
        call()
    finally:
        hook.remove()
    return seen


@pytest.mark.parametrize("size", [16, 32])
def test_the_flux_pipeline_samples_under_inference_mode(flux_pipe, size):
    apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8))
    expected = text_to_image(flux_pipe, size)
    with torch.inference_mode():
        assert torch.equal(text_to_image(flux_pipe, size), expected)


@pytest.mark.parametrize("duplicate", [copy.deepcopy, lambda pipe: pickle.loads(pickle.dumps(pipe))])
def test_a_copied_patched_flux_pipeline_samples_as_its_original(flux_pipe, duplicate):
    """The shift cap travels with the copy, bound to the copy's scheduler and pipeline."""
    apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8))
    twin = duplicate(flux_pipe)
    expected_schedule = schedule_of(flux_pipe, lambda: text_to_image(flux_pipe, 32))
    expected = text_to_image(flux_pipe, 32)
    schedule = schedule_of(twin, lambda: text_to_image(twin, 32))
    assert schedule == expected_schedule
    assert torch.equal(text_to_image(twin, 32), expected)
    assert vars(twin.scheduler)["set_timesteps"].scheduler is twin.scheduler
