"""Calibration of diffusers pipelines (tiny random Flux, Qwen-Image, Wan): the token geometry against what the
transformer sees, resume after a kill without recomputing a finished cell, a changed setting starting afresh,
--batch-size, the bands (aspect, searched options) and bad input refused before any sampling."""

from __future__ import annotations

import json
import threading
import types

import pytest
import torch

from axialrope.pipelines import calibrate
from axialrope.pipelines.evaluation.diffusers_calibration import calibration
from axialrope.pipelines.evaluation.diffusers_calibration.result import PipelineCalibration, TargetResult, check_bands
from axialrope.pipelines.evaluation.diffusers_calibration.targets import Target, Variant
from axialrope.pipelines.sampling import diffusers_families
from axialrope.pipelines.sampling.diffusers_families import load_family_pipeline

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPTS = ["a red cube", "a cat"]
REAL_GENERATE = diffusers_families.generate


@pytest.fixture(scope="module")
def flux(tiny_flux_folder):
    return load_family_pipeline(str(tiny_flux_folder), "cpu")


def test_the_token_grid_of_each_size_is_the_one_the_transformer_sees(
    flux, tiny_wan_folder, tiny_qwen_image_folder, tmp_path
):
    """Flux and Qwen-Image pack 2 x 2 latents a token (patch_size 1 and 2 in their configs), Wan patches (1, 2, 2)
    of latents 8x in space and 4x in time: the plan's grid must be the transformer's."""
    cases = [
        (flux, (8, 8), ["16x32"], None),
        (load_family_pipeline(str(tiny_qwen_image_folder), "cpu"), (4, 4), ["16x24"], None),
        (load_family_pipeline(str(tiny_wan_folder), "cpu"), (2, 2, 2), ["32x48"], [9]),
    ]
    for pipe, grid, sizes, frames in cases:
        job = calibration.plan_pipeline(
            pipe, PROMPTS, sizes=sizes, frames=frames, methods=["none"], trained_grid=grid, steps=1, out=tmp_path
        )
        seen = []

        def record(module, args, kwargs, seen=seen):
            hidden = kwargs.get("hidden_states", args[0] if args else None)
            seen.append(tuple(hidden.shape))

        hook = pipe.transformer.register_forward_pre_hook(record, with_kwargs=True)
        try:
            for target in (job.geometry.trained, *job.targets):
                seen.clear()
                calibration.sample(job, target, Variant("none"), 0)
                shape = seen[0]
                tokens = shape[1] if len(shape) == 3 else shape[2] * (shape[3] // 2) * (shape[4] // 2)
                assert tokens == torch.Size(target.grid).numel(), (type(pipe).__name__, target, shape)
        finally:
            hook.remove()
    assert job.targets[0].grid == (3, 2, 3)  # 9 frames: 3 latent frames; 32 x 48 px: 2 x 3 tokens of 16 px


def counting(monkeypatch, stop_after: int | None = None):
    """Counts the pipeline calls of `generate` (and the prompts of each); raises KeyboardInterrupt at call
    `stop_after` + 1, as Ctrl-C would, before it samples."""
    calls = []

    def generate(pipe, *args, **kwargs):
        if stop_after is not None and len(calls) == stop_after:
            raise KeyboardInterrupt
        calls.append(list(kwargs["prompt"]))
        return REAL_GENERATE(pipe, *args, **kwargs)

    monkeypatch.setattr(diffusers_families, "generate", generate)
    return calls


SETTINGS = dict(sizes=["32x32"], methods=["none", "pi", "yarn"], trained_grid=[8, 8], steps=1, progress=False)
CELLS = 2 + 3 * 2  # the reference at the trained size per seed, then each method per seed


def test_a_killed_calibration_continues_without_recomputing_a_finished_cell(flux, tmp_path, monkeypatch):
    out = tmp_path / "out"
    calls = counting(monkeypatch, stop_after=3)
    with pytest.raises(KeyboardInterrupt):
        calibrate(flux, PROMPTS, out=out, **SETTINGS)
    assert len(calls) == 3 and not (out / "calibration.json").exists()
    assert len(list((out / "cells").glob("*.cell.json"))) == 3
    lines = []
    calls = counting(monkeypatch)
    result = calibrate(flux, PROMPTS, out=out, report=lines.append, **SETTINGS)
    assert len(calls) == CELLS - 3  # the 3 finished cells are read, not sampled again
    assert any("3 finished cells" in line for line in lines)
    written = json.loads((out / "calibration.json").read_text())
    assert written["targets"][0]["values"] == result.targets[0].values
    assert set(written["targets"][0]["values"]) == {"none", "pi", "yarn"}

    calls = counting(monkeypatch)
    calibrate(flux, PROMPTS, out=out, report=lines.append, **{**SETTINGS, "steps": 2})
    assert len(calls) == CELLS  # a changed setting: every cell afresh, and one line says why
    assert any("settings changed" in line and "steps 1 -> 2" in line for line in lines)


def test_batch_size_bounds_the_samples_of_a_call(flux, tmp_path, monkeypatch):
    calls = counting(monkeypatch)
    settings = {**SETTINGS, "methods": ["none"]}
    calibration.calibrate_pipeline(flux, PROMPTS, out=tmp_path / "one", batch_size=1, **settings)
    assert len(calls) == 2 * 2 * len(PROMPTS) and all(len(prompts) == 1 for prompts in calls)
    calls.clear()
    calibration.calibrate_pipeline(flux, PROMPTS, out=tmp_path / "all", **settings)
    assert len(calls) == 2 * 2 and all(len(prompts) == len(PROMPTS) for prompts in calls)


def test_processes_share_the_cells_and_give_the_one_process_result(flux, tiny_flux_folder, tmp_path, monkeypatch):
    """Two workers (threads with a barrier, each its own copy of the pipeline) as `accelerate launch` runs two
    processes: each samples its share of the cells, and the result is the one a single process gives."""
    calls = counting(monkeypatch)
    alone = calibration.calibrate_pipeline(flux, PROMPTS, out=tmp_path / "one", **SETTINGS)
    assert len(calls) == CELLS
    calls.clear()
    pipes = [flux, load_family_pipeline(str(tiny_flux_folder), "cpu")]
    barrier = threading.Barrier(2, timeout=120)
    results, errors = {}, []
    settings = {k: v for k, v in SETTINGS.items() if k != "progress"}

    def work(index):
        try:
            job = calibration.plan_pipeline(pipes[index], PROMPTS, out=tmp_path / "two", **settings)
            share = calibration.Share(index, 2, barrier.wait)
            results[index] = calibration.run_pipeline_job(job, progress=False, share=share)
        except BaseException as error:  # noqa: BLE001  (raised again below, in the test's thread)
            errors.append(error)
            barrier.abort()

    workers = [threading.Thread(target=work, args=(index,)) for index in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors, errors
    assert len(calls) == CELLS  # every cell once, between the two
    shared = json.loads((tmp_path / "two" / "calibration.json").read_text())
    assert shared["targets"] == json.loads((tmp_path / "one" / "calibration.json").read_text())["targets"]
    assert results[0].bands == results[1].bands == alone.bands


def fake_result(values_by_target: dict, variants: list[Variant]) -> PipelineCalibration:
    """A result from given scores (no sampling): targets named "HxW" over a 16 x 16 token trained grid."""
    job = types.SimpleNamespace(variants=variants, prompts=PROMPTS, num=1, seeds=2, steps=1, video=False)
    results = []
    for name, values in values_by_target.items():
        height, width = (int(n) for n in name.split("x"))
        target = Target(height, width, None, (height // 16, width // 16))
        results.append(TargetResult(target, target.scale((16, 16)), values, {}))
    return PipelineCalibration(job, results, torch.zeros(1, 3, 8, 8))


def test_bands_per_aspect_and_scale_carry_the_searched_options():
    variants = [Variant("none"), Variant("yarn"), Variant("yarn", options={"beta_fast": 16.0})]
    labels = [v.label for v in variants]
    scores = {
        "512x512": dict(zip(labels, ([1.0, 1.1], [2.0, 2.0], [3.0, 3.0]), strict=True)),
        "1024x1024": dict(zip(labels, ([5.0, 5.0], [2.0, 2.1], [3.0, 3.0]), strict=True)),
        "256x512": dict(zip(labels, ([5.0, 5.0], [4.0, 4.0], [1.0, 1.2]), strict=True)),
    }
    result = fake_result(scores, variants)
    check_bands(result)
    assert [(b.get("aspect"), b["up_to_scale"], b["method"], b.get("options")) for b in result.bands] == [
        (0.5, None, "yarn", {"beta_fast": 16.0}),
        (1.0, 3.0, "none", None),  # halfway between 2x and 4x
        (1.0, None, "yarn", None),
    ]
    square = fake_result({k: v for k, v in scores.items() if k != "256x512"}, variants)
    assert all("aspect" not in band and "options" not in band for band in square.bands)


def test_bad_input_is_refused_before_any_sampling(flux, tiny_flux_folder, tmp_path, monkeypatch):
    calls = counting(monkeypatch)
    plan = dict(trained_grid=[8, 8], steps=1, out=tmp_path)
    cases = [
        (dict(sizes=["32x32"], methods=["riflex"]), "--methods 'riflex'.*FLUX"),
        (dict(sizes=["32x32"], methods=["warp"]), "--methods 'warp'"),
        (dict(sizes=["33x32"]), "--sizes 33x32: each side must be a positive multiple of 2"),
        (dict(sizes=["8x32"]), "below the trained"),
        (dict(sizes=["16x16"]), "the trained size itself"),
        (dict(sizes=["32x32"], scales=[2.0]), "--sizes or --scales, not both"),
        (dict(sizes=["32x32"], frames=[9]), "--frames given, but FluxPipeline makes images"),
        (dict(sizes=["big"]), "--sizes: expected HEIGHTxWIDTH"),
        (dict(sizes=["32x32"], seeds=1), "--seeds must be an integer >= 2"),
        (dict(sizes=["32x32"], trained_grid=[8, 8, 8]), "trained_grid must be 2"),
    ]
    for settings, message in cases:
        with pytest.raises(ValueError, match=message):
            calibration.plan_pipeline(flux, PROMPTS, **{**plan, **settings})
    with pytest.raises(ValueError, match="at least 2 samples"):
        calibration.plan_pipeline(flux, ["a cat"], sizes=["32x32"], **plan)
    with pytest.raises(ValueError, match="--prompt"):
        calibration.plan_pipeline(flux, ["  "], sizes=["32x32"], **plan)
    empty = tmp_path / "prompts.txt"
    empty.write_text("\n  \n")
    with pytest.raises(ValueError, match="--prompts-file .* holds no prompt"):
        calibration.read_prompts_file(empty)
    unet = types.SimpleNamespace(transformer=torch.nn.Linear(1, 1))
    with pytest.raises(TypeError, match="pipe: .*FluxTransformer2DModel.*got Linear"):
        calibration.plan_pipeline(unet, PROMPTS, sizes=["32x32"], **plan)
    assert calls == []
