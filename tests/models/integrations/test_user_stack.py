"""A patched model in the stack a diffusers user adds around it (issue 36), on tiny configs of Flux (its real
FluxPipeline and FluxImg2ImgPipeline), Wan, Qwen-Image and Z-Image, dype-yarn at twice the trained grid:
torch.compile over a sampler's whole schedule (graph breaks and compilations counted against the untouched
model), inference_mode, copies and pickles, Flux's shift cap in every pipeline and through scheduler swaps,
batches whose samples are at different diffusion times, and the rows that already worked (casting, LoRA,
cache hooks, group offloading, save and reload, gradients)."""

import copy
import pickle
import warnings

import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, FluxImg2ImgPipeline, FluxPipeline
from torch._dynamo.utils import counters

from axialrope.models import apply_extrapolation

STACK = ("flux", "wan", "qwen-image", "z-image")
STEPS = 28  # a sampler's whole schedule: DyPE's plan changes at every one of its timesteps


def sampler_timesteps(family, steps: int = STEPS) -> list[float]:
    """The transformer's timestep argument at each step of a flow-matching schedule (shift 3, as Wan's)."""
    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    scheduler.set_timesteps(steps)
    return [family.time.timestep_at(sigma) for sigma in scheduler.sigmas[:-1].tolist()]


def compiled_schedule(tiny, model, spec, runs, backend="eager"):
    """`torch.compile(model)` over `runs`, (grid, timesteps) pairs in turn: (outputs per run, graph breaks,
    frames compiled by each run's first step, frames compiled in all)."""
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend=backend)
    outputs, firsts = [], []
    for grid, timesteps in runs:
        outputs.append([tiny.run(compiled, spec, grid, timesteps[0])])
        firsts.append(counters["frames"]["total"])
        outputs[-1] += [tiny.run(compiled, spec, grid, timestep) for timestep in timesteps[1:]]
    breaks = sum(counters["graph_break"].values())
    return outputs, breaks, firsts, counters["frames"]["total"]


def patched(spec, method="dype-yarn"):
    model = spec.make()
    apply_extrapolation(model, method, trained_grid=spec.trained)
    return model


# -- torch.compile ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["dype-yarn", "sega"])  # a new plan every step: from the time, from the latent
@pytest.mark.parametrize("name", STACK)
def test_a_compiled_patched_model_samples_a_whole_schedule_without_breaks_or_recompiles(tiny, name, method):
    """The plan's numbers never reach the graph (the rope is one opaque operator, the call plan runs outside
    it): at the trained grid and at twice it, over a whole schedule, no more graph breaks or compiled frames
    than the untouched model, one compilation per size, and the eager model's outputs (dynamo's eager backend
    runs the traced graph as it is)."""
    spec, family = tiny.TINY[name], tiny.FAMILY[name]
    timesteps, twice = sampler_timesteps(family), tuple(2 * n for n in spec.trained)
    runs = [(spec.trained, timesteps[::9]), (twice, timesteps)]  # within the trained grid no time is read
    _, plain_breaks, _, plain_frames = compiled_schedule(tiny, spec.make(), spec, [(g, t[:1]) for g, t in runs])
    model = patched(spec, method)
    outputs, breaks, firsts, frames = compiled_schedule(tiny, model, spec, runs)
    assert breaks <= plain_breaks and frames <= plain_frames
    assert frames == firsts[-1]  # nothing recompiled over the schedule
    for (grid, steps), got in zip(runs, outputs, strict=True):
        for step in (0, len(steps) // 2, -1):
            assert torch.equal(got[step], tiny.run(model, spec, grid, steps[step]))


@pytest.mark.slow
@pytest.mark.parametrize("name", STACK)
def test_inductor_compiles_a_patched_model_once_per_size(tiny, name):
    spec, family = tiny.TINY[name], tiny.FAMILY[name]
    grid, timesteps = tuple(2 * n for n in spec.trained), sampler_timesteps(family)[::4]
    model = patched(spec)
    (outputs,), _, (first,), frames = compiled_schedule(tiny, model, spec, [(grid, timesteps)], backend="inductor")
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


# -- Flux's shift cap: each call's own grid, whatever the pipeline and its scheduler ---------------------------

IMAGE = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(3))


def image_to_image(pipe, height: int, width: int | None = None):
    """A 3-step tiny img2img sample of height x width px at strength 1 (every step): these pipelines set their
    schedule before they prepare their latents."""
    width = width or height
    return pipe(
        "a cat",
        image=torch.nn.functional.interpolate(IMAGE, size=(height, width)),
        height=height,
        width=width,
        strength=1.0,
        num_inference_steps=3,
        max_sequence_length=8,
        generator=torch.Generator().manual_seed(0),
        output_type="pt",
    ).images


def capped_schedule(pipe, tokens: int) -> list[float]:
    """The tiny schedule's 3 steps with DyPE's shift for an image of `tokens` tokens beyond the trained grid."""
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift

    expected = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
    expected.set_timesteps(sigmas=[1.0, 2 / 3, 1 / 3], mu=calculate_shift(tokens, 16, tokens, 0.5, 1.15))
    return (expected.timesteps / 1000).tolist()


@pytest.fixture
def img2img(tiny_flux_folder):
    pipe = FluxImg2ImgPipeline.from_pretrained(tiny_flux_folder)
    pipe.set_progress_bar_config(disable=True)
    return pipe


# 4 x 32 px is 2 x 16 tokens: past the trained 8 x 8 on x with 32 tokens, fewer than the tiny schedule's line end
# (64): only the call's own grid tells that it needs the cap. 8 px (4 x 4 tokens) sits inside, at diffusers' mu.
WIDE, SMALL = (4, 32), 8


def test_img2img_caps_the_call_beyond_the_grid_and_leaves_the_next_call_alone(img2img):
    """A grid recorded by one call never reaches the next: a call inside the trained grid after one beyond it is
    the untouched pipeline's."""
    untouched_schedule = schedule_of(img2img, lambda: image_to_image(img2img, SMALL))
    untouched = image_to_image(img2img, SMALL)
    apply_extrapolation(img2img, "dype-yarn", trained_grid=(8, 8))
    assert schedule_of(img2img, lambda: image_to_image(img2img, *WIDE)) == pytest.approx(capped_schedule(img2img, 32))
    assert schedule_of(img2img, lambda: image_to_image(img2img, SMALL)) == untouched_schedule
    assert torch.equal(image_to_image(img2img, SMALL), untouched)


def test_pipelines_sharing_a_scheduler_through_from_pipe_do_not_cross_talk(img2img, tiny_flux_folder):
    reference = FluxPipeline.from_pretrained(tiny_flux_folder)
    reference.set_progress_bar_config(disable=True)
    untouched = text_to_image(reference, SMALL)
    apply_extrapolation(img2img, "dype-yarn", trained_grid=(8, 8))
    sibling = FluxPipeline.from_pipe(img2img)
    sibling.set_progress_bar_config(disable=True)
    assert sibling.scheduler is img2img.scheduler
    image_to_image(img2img, *WIDE)
    assert torch.equal(text_to_image(sibling, SMALL), untouched)
    # the sibling's own call beyond the grid: its token count read back from mu, past the trained grid's
    assert schedule_of(sibling, lambda: text_to_image(sibling, 32)) == pytest.approx(capped_schedule(sibling, 256))


def test_a_replaced_scheduler_gets_the_cap_at_the_next_call(flux_pipe):
    apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8))
    flux_pipe.scheduler = FlowMatchEulerDiscreteScheduler.from_config(flux_pipe.scheduler.config)
    assert schedule_of(flux_pipe, lambda: text_to_image(flux_pipe, 32)) == pytest.approx(
        capped_schedule(flux_pipe, 256)
    )


def test_a_pipeline_with_a_scheduler_of_its_own_is_told_it_runs_without_the_cap(flux_pipe):
    """from_pipe(..., scheduler=other) gives a pipeline apply_extrapolation never saw: the transformer keeps DyPE,
    the schedule is uncapped; the call beyond the trained grid says so, once, and changes nothing."""
    apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8))
    other = FlowMatchEulerDiscreteScheduler.from_config(flux_pipe.scheduler.config)
    sibling = FluxPipeline.from_pipe(flux_pipe, scheduler=other)
    sibling.set_progress_bar_config(disable=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text_to_image(flux_pipe, 32)  # its own capped schedule: no word
        text_to_image(sibling, 16)  # the trained grid: the cap changes nothing there
    with pytest.warns(UserWarning, match=r"from_pipe\(\.\.\., scheduler=\.\.\.\).*shift_cap=False") as caught:
        text_to_image(sibling, 32)
        text_to_image(sibling, 32)
    assert len([w for w in caught if "shift cap" in str(w.message)]) == 1


def test_shift_cap_off_leaves_no_check_on_the_transformer(flux_pipe):
    hooks = dict(flux_pipe.transformer._forward_pre_hooks)
    handle = apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8), shift_cap=False)
    sibling = FluxPipeline.from_pipe(
        flux_pipe, scheduler=FlowMatchEulerDiscreteScheduler.from_config(flux_pipe.scheduler.config)
    )
    sibling.set_progress_bar_config(disable=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text_to_image(sibling, 32)
    handle.remove()
    assert dict(flux_pipe.transformer._forward_pre_hooks) == hooks


def test_removing_the_extrapolation_uncaps_every_scheduler_it_capped(flux_pipe):
    handle = apply_extrapolation(flux_pipe, "dype-yarn", trained_grid=(8, 8))
    first = flux_pipe.scheduler
    flux_pipe.scheduler = FlowMatchEulerDiscreteScheduler.from_config(first.config)
    text_to_image(flux_pipe, 32)
    handle.remove()
    assert "set_timesteps" not in vars(first) and "set_timesteps" not in vars(flux_pipe.scheduler)
    assert "check_inputs" not in vars(flux_pipe)


# -- batches whose samples are at different diffusion times ------------------------------------------------------


def batch_of(spec, model, grid, timesteps):
    """One forward's kwargs for a batch of samples, sample i at timesteps[i] (its own noise)."""
    singles = [spec.inputs(model, grid, t) for t in timesteps]
    for index, single in enumerate(singles):  # the samples differ in content too
        for key, value in single.items():
            if key in ("hidden_states", "x") and index:
                single[key] = value + index if torch.is_tensor(value) else [v + index for v in value]
    batch = {}
    for key, value in singles[0].items():
        parts = [single[key] for single in singles]
        if torch.is_tensor(value) and key not in ("img_ids", "txt_ids"):
            batch[key] = torch.cat(parts)
        elif isinstance(value, list):
            batch[key] = [item for part in parts for item in part]
        else:
            batch[key] = value
    return batch, singles


def rope_output(model, call):
    seen = []
    hook = model.rope.register_forward_hook(lambda m, a, out: seen.append(out))
    try:
        with torch.no_grad():
            output = call()[0]
    finally:
        hook.remove()
    return output, seen[0]


@pytest.mark.parametrize("compiled", [False, True])
def test_wan_encodes_each_sample_of_a_batch_at_its_own_time(tiny, compiled):
    spec = tiny.TINY["wan"]
    model = patched(spec)
    grid, times = tuple(2 * n for n in spec.trained), (300.0, 800.0)
    batch, singles = batch_of(spec, model, grid, times)
    run = torch.compile(model, backend="eager") if compiled else model
    torch._dynamo.reset()
    output, tables = rope_output(model, lambda: run(**batch, return_dict=False))
    for index, single in enumerate(singles):
        alone, own = rope_output(model, lambda single=single: model(**single, return_dict=False))
        if not compiled:  # the rope module itself runs eagerly, inside the graph's operator, when compiled
            assert all(torch.equal(t[index], o[0]) for t, o in zip(tables, own, strict=True))
        torch.testing.assert_close(output[index], alone[0], rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", ["flux", "qwen-image", "z-image"])
def test_a_batch_at_different_times_is_refused_where_the_rope_has_one_table(tiny, name):
    spec = tiny.TINY[name]
    model = patched(spec)
    at = tiny.FAMILY[name].time.timestep_at
    grid = tuple(2 * n for n in spec.trained)
    batch, _ = batch_of(spec, model, grid, (at(0.3), at(0.8)))
    with pytest.raises(ValueError, match="different diffusion times"), torch.no_grad():
        model(**batch, return_dict=False)
    same, _ = batch_of(spec, model, grid, (at(0.3), at(0.3)))
    with torch.no_grad():
        model(**same, return_dict=False)  # one time for all: one table


# -- compiled modules and diffusers hooks -----------------------------------------------------------------------


def test_a_compiled_model_is_patched_through_the_module_it_wraps(tiny):
    spec = tiny.TINY["wan"]
    model = spec.make()
    compiled = torch.compile(model, backend="eager")
    grid, timestep = tuple(2 * n for n in spec.trained), 700.0
    torch._dynamo.reset()
    plain = tiny.run(compiled, spec, grid, timestep)  # compiled untouched first
    handle = apply_extrapolation(compiled, "dype-yarn", trained_grid=spec.trained)
    assert handle.transformer is model
    extrapolated = tiny.run(compiled, spec, grid, timestep)
    assert torch.equal(extrapolated, tiny.run(model, spec, grid, timestep)) and not torch.equal(extrapolated, plain)
    handle.remove()
    assert torch.equal(tiny.run(compiled, spec, grid, timestep), plain)


def group_offloaded(model, offload_type="leaf_level"):
    cpu = torch.device("cpu")
    extra = {"num_blocks_per_group": 1} if offload_type == "block_level" else {}
    model.enable_group_offload(cpu, offload_device=cpu, offload_type=offload_type, **extra)
    return model


def test_a_rope_under_group_offloading_is_refused_by_its_cause(tiny):
    """Leaf-level group offloading hooks Wan's rope (it holds buffers): the refusal says so, and the order that
    works (patch, then offload) gives the patched model's outputs."""
    spec = tiny.TINY["wan"]
    with pytest.raises(ValueError, match=r"carries diffusers hooks \(group offloading\): call apply_extrapolation "):
        apply_extrapolation(group_offloaded(spec.make()), "dype-yarn", trained_grid=spec.trained)
    grid = tuple(2 * n for n in spec.trained)
    for offload_type in ("leaf_level", "block_level"):
        model = group_offloaded(patched(spec), offload_type)
        assert torch.equal(tiny.run(model, spec, grid, 500.0), tiny.run(patched(spec), spec, grid, 500.0))


# -- what already worked, kept so: casting, LoRA, cache hooks, save and reload, gradients -----------------------


@pytest.mark.parametrize("storage", [torch.bfloat16, torch.float8_e4m3fn])
def test_layerwise_casting_before_or_after_patching_gives_one_model(tiny, storage):
    spec = tiny.TINY["flux"]
    grid = tuple(2 * n for n in spec.trained)

    def cast(model):
        model.enable_layerwise_casting(storage_dtype=storage, compute_dtype=torch.float32)
        return model

    before, after, plain = patched_after(spec, cast), cast(patched(spec)), cast(spec.make())
    assert torch.equal(tiny.run(before, spec, grid, 0.6), tiny.run(after, spec, grid, 0.6))
    assert torch.equal(tiny.run(after, spec, spec.trained, 0.6), tiny.run(plain, spec, spec.trained, 0.6))
    assert not torch.equal(tiny.run(after, spec, grid, 0.6), tiny.run(plain, spec, grid, 0.6))


def patched_after(spec, change, method="dype-yarn"):
    """A model changed by `change`, then patched."""
    model = change(spec.make())
    apply_extrapolation(model, method, trained_grid=spec.trained)
    return model


def test_a_lora_adapter_added_before_or_after_patching_gives_one_model(tiny):
    pytest.importorskip("peft")
    from peft import LoraConfig

    spec = tiny.TINY["flux"]
    grid = tuple(2 * n for n in spec.trained)

    def adapted(model):
        torch.manual_seed(1)  # init_lora_weights=False: a random adapter that changes the output
        model.add_adapter(LoraConfig(r=2, target_modules=["to_q", "to_k", "to_v"], init_lora_weights=False))
        return model

    before, plain = patched_after(spec, adapted), adapted(spec.make())
    after = patched(spec)
    adapted(after)
    expected = tiny.run(before, spec, grid, 0.6)
    assert torch.equal(tiny.run(after, spec, grid, 0.6), expected)
    assert not torch.equal(expected, tiny.run(plain, spec, grid, 0.6))
    assert not torch.equal(expected, tiny.run(patched(spec), spec, grid, 0.6))  # the adapter acts
    after._axialrope_extrapolation.remove()
    assert torch.equal(tiny.run(after, spec, grid, 0.6), tiny.run(plain, spec, grid, 0.6))


def cache_configs():
    from diffusers import FirstBlockCacheConfig, PyramidAttentionBroadcastConfig, TaylorSeerCacheConfig

    return {
        "first-block": FirstBlockCacheConfig(threshold=0.5),
        "taylorseer": TaylorSeerCacheConfig(cache_interval=2, disable_cache_before_step=1),
        "pab": PyramidAttentionBroadcastConfig(
            spatial_attention_block_skip_range=2,
            spatial_attention_timestep_skip_range=(-1, 1001),
            current_timestep_callback=lambda: 500,
        ),
    }


@pytest.mark.parametrize("cache", ["first-block", "taylorseer", "pab"])
def test_diffusers_cache_hooks_run_on_a_patched_model(tiny, cache):
    """Over a few steps with the cache on: at the trained grid the untouched model's outputs, beyond it the
    patched model's tables under the same hook."""
    spec = tiny.TINY["flux"]

    def steps(model, grid):
        model.enable_cache(cache_configs()[cache])
        with model.cache_context("cond"):
            outputs = [tiny.run(model, spec, grid, t) for t in (1.0, 0.75, 0.5, 0.25)]
        model.disable_cache()
        return torch.stack(outputs)

    assert torch.equal(steps(patched(spec), spec.trained), steps(spec.make(), spec.trained))
    twice = tuple(2 * n for n in spec.trained)
    assert not torch.equal(steps(patched(spec), twice), steps(spec.make(), twice))


def test_a_patched_model_saves_and_reloads_untouched(tiny, tmp_path):
    spec = tiny.TINY["flux"]
    model = patched(spec)
    model.save_pretrained(tmp_path)
    assert "axialrope" not in (tmp_path / "config.json").read_text()
    reloaded = type(model).from_pretrained(tmp_path).eval()
    grid = tuple(2 * n for n in spec.trained)
    assert torch.equal(tiny.run(reloaded, spec, grid, 0.6), tiny.run(spec.make(), spec, grid, 0.6))


@pytest.mark.parametrize("name, compiled", [("flux", False), ("wan", False), ("wan", True)])
def test_gradients_flow_through_a_patched_model_at_twice_its_grid(tiny, name, compiled):
    spec = tiny.TINY[name]
    grid, timestep = tuple(2 * n for n in spec.trained), 0.5 * tiny.FAMILY[name].time.at_noise

    def gradients(model, compiled=compiled):
        model.train()
        run = torch.compile(model, backend="eager") if compiled else model
        run(**spec.inputs(model, grid, timestep), return_dict=False)[0].square().mean().backward()
        return {n: p.grad for n, p in model.named_parameters() if p.grad is not None}

    torch._dynamo.reset()
    plain, extrapolated = gradients(spec.make(), compiled=False), gradients(patched(spec))
    assert plain.keys() == extrapolated.keys()
    assert all(torch.isfinite(g).all() for g in extrapolated.values())
    assert any(not torch.equal(plain[n], extrapolated[n]) for n in plain)
    if compiled:  # dynamo's eager backend runs the traced graph: the eager model's gradients
        torch.testing.assert_close(extrapolated, gradients(patched(spec), compiled=False), rtol=0, atol=0)


def test_the_attention_side_stays_the_users(tiny):
    """Fused q/k/v projections, another attention backend and a user's processor change nothing the
    patch does: the rope's tables reach whatever computes the attention."""
    from diffusers.models.attention_dispatch import attention_backend
    from diffusers.models.transformers.transformer_flux import FluxAttnProcessor

    spec = tiny.TINY["flux"]
    grid = tuple(2 * n for n in spec.trained)
    expected = tiny.run(patched(spec), spec, grid, 0.6)
    fused = patched(spec)
    fused.fuse_qkv_projections()
    torch.testing.assert_close(tiny.run(fused, spec, grid, 0.6), expected, rtol=1e-5, atol=1e-6)
    with attention_backend("_native_math"):
        torch.testing.assert_close(tiny.run(patched(spec), spec, grid, 0.6), expected, rtol=1e-5, atol=1e-6)
    own = patched(spec)
    own.set_attn_processor(FluxAttnProcessor())
    assert torch.equal(tiny.run(own, spec, grid, 0.6), expected)
