"""`axialrope calibrate --model M` on tiny random diffusers pipelines (Flux, Wan with frames, Qwen-Image) end to end,
the cells shared by two accelerate processes giving the one-process result, and bad flags refused (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from PIL import Image

from axialrope.pipelines.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


def calibrate_args(folder, out, *extra):
    return ["calibrate", "--model", str(folder), "--prompt", "a red cube", "--prompt", "a cat", "--steps", "1",
            "--out", str(out), *extra]  # fmt: skip


def read(out) -> dict:
    return json.loads((out / "calibration.json").read_text())


def test_flux_calibrates_square_and_non_square_sizes(tiny_flux_folder, tmp_path, capsys):
    out = tmp_path / "flux"
    args = calibrate_args(tiny_flux_folder, out, "--sizes", "32x32", "16x32", "--trained-grid", "8", "8")
    assert main([*args, "--methods", "none", "yarn+entropy", "dype-yarn", "--search"]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "FluxPipeline" in printed
    record = read(out)
    assert (record["kind"], record["version"], record["reference"]) == ("axialrope-calibration", 1, "self")
    assert record["trained_grid"] == [8, 8] and record["trained_size"] == [16, 16]
    assert (record["family"], record["pipeline"], record["prompts"]) == (
        "flux",
        "FluxPipeline",
        ["a red cube", "a cat"],
    )
    assert [t["name"] for t in record["targets"]] == ["16x32", "32x32"]
    labels = set(record["targets"][0]["values"])
    assert {"none", "yarn+entropy", "dype-yarn", "dype-yarn dype_lambda_t=4", "yarn+entropy beta_fast=16"} <= labels
    assert all(len(values) == 2 for t in record["targets"] for values in t["values"].values())  # per seed
    bands = record["default_extrapolation"]
    assert sorted(band["aspect"] for band in bands) == [0.5, 1.0]  # non-square: every band names its aspect
    for band, target in zip(bands, record["targets"], strict=True):
        variant = record["variants"][target["best"]]
        assert (band["method"], band["entropy_scaling"], band.get("options", {})) == (
            variant["method"],
            variant["entropy_scaling"],
            variant["options"],
        )
    assert "| dype-yarn dype_lambda_t=4 |" in (out / "calibration.md").read_text()
    assert Image.open(out / "calibration-16x32.png").size[1] > 16 * len(labels)  # a row per method


def test_wan_calibrates_in_time_and_space(tiny_wan_folder, tmp_path):
    out = tmp_path / "wan"
    args = calibrate_args(tiny_wan_folder, out, "--frames", "9", "--trained-grid", "2", "2", "2")
    assert main([*args, "--methods", "none", "riflex"]) == 0
    record = read(out)
    assert record["trained_grid"] == [2, 2, 2] and record["trained_frames"] == 5
    (target,) = record["targets"]
    assert (target["name"], target["frames"], target["grid"], target["scale"]) == ("9x32x32", 9, [3, 2, 2], 1.5)
    assert set(target["values"]) == {"none", "riflex"} and target["parts"]["none"][0]["loop"] is not None
    assert (out / "calibration-9x32x32.png").is_file()


def test_qwen_image_calibrates(tiny_qwen_image_folder, tmp_path):
    out = tmp_path / "qwen"
    args = calibrate_args(tiny_qwen_image_folder, out, "--scales", "2", "--trained-grid", "4", "4")
    assert main([*args, "--methods", "none", "ntk"]) == 0
    record = read(out)
    assert record["pipeline"] == "QwenImagePipeline" and record["targets"][0]["size"] == [32, 32]
    assert record["default_extrapolation"][0]["method"] in ("none", "ntk")


@pytest.mark.slow  # two processes under accelerate launch; the sharing itself is tested in-process (evaluation/)
def test_two_accelerate_processes_share_the_cells_and_give_the_one_process_result(tiny_flux_folder, tmp_path):
    args = calibrate_args(tiny_flux_folder, tmp_path / "one", "--sizes", "32x32", "--trained-grid", "8", "8")
    args += ["--methods", "none", "pi", "--device", "cpu"]
    assert main(args) == 0
    two = tmp_path / "two"
    shared = [a if a != str(tmp_path / "one") else str(two) for a in args]
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
              "-m", "axialrope.pipelines.cli", *shared]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(launch, capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("wrote") == 1  # the main process writes the result
    one_record, two_record = read(tmp_path / "one"), read(two)
    assert two_record["targets"] == one_record["targets"]
    assert two_record["default_extrapolation"] == one_record["default_extrapolation"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sizes", "32x32", "--scales", "2"], "--sizes or --scales, not both"),
        (["--sizes", "33x32"], "--sizes 33x32: each side must be a positive multiple of 2"),
        (["--sizes", "32x32", "--methods", "riflex"], "--methods 'riflex'"),
        (["--sizes", "32x32", "--reference-dir", "photos"], "--reference-dir is for this project's own models"),
    ],
)
def test_bad_flags_are_refused_before_any_sampling(tiny_flux_folder, tmp_path, capsys, extra, message):
    args = calibrate_args(tiny_flux_folder, tmp_path / "out", "--trained-grid", "8", "8", *extra)
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "cells").exists()


def test_an_empty_prompts_file_is_refused(tiny_flux_folder, tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n")
    args = ["calibrate", "--model", str(tiny_flux_folder), "--prompts-file", str(prompts), "--sizes", "32x32"]
    assert main(args) == 2
    assert "holds no prompt" in capsys.readouterr().err


def test_the_calibration_drives_auto_in_python_and_in_sample(tiny_flux_folder, tmp_path):
    """What `calibrate` writes is what `apply_extrapolation(..., "auto", calibration=...)` and
    `sample --calibration` read: each size samples with its band's method, as if applied by hand."""
    import numpy as np
    import torch
    from diffusers import FluxPipeline

    from axialrope.models import apply_extrapolation

    out = tmp_path / "flux"
    args = calibrate_args(tiny_flux_folder, out, "--sizes", "32x32", "16x32", "--trained-grid", "8", "8")
    assert main([*args, "--methods", "none", "pi", "dype-yarn"]) == 0
    record = read(out)
    pipe = FluxPipeline.from_pretrained(tiny_flux_folder)
    pipe.set_progress_bar_config(disable=True)

    def sample(height, width):
        generator = torch.Generator().manual_seed(0)
        call = dict(height=height, width=width, num_inference_steps=2, generator=generator, output_type="np")
        return pipe("a cat", **call).images

    for band in record["default_extrapolation"]:
        height, width = (32, 32) if band["aspect"] == 1.0 else (16, 32)
        with apply_extrapolation(pipe, band["method"], trained_grid=(8, 8), entropy_scaling=band["entropy_scaling"]):
            by_hand = sample(height, width)
        with apply_extrapolation(pipe, "auto", calibration=out / "calibration.json"):
            assert np.array_equal(sample(height, width), by_hand)
    picture = tmp_path / "auto.png"
    sample_args = ["sample", "--model", str(tiny_flux_folder), "--prompt", "a cat", "--height", "16", "--width", "32",
                   "--steps", "2", "--calibration", str(out / "calibration.json"), "--out", str(picture)]  # fmt: skip
    assert main(sample_args) == 0 and Image.open(picture).size == (32, 16)
