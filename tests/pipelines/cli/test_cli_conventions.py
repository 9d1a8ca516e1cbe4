"""The command line is quiet and exact: defaults in every --help, result lines that say what was
sampled, --scheduler with clear refusals, and no warnings on a normal CPU run."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import pytest
import torch
from PIL import Image

from axialrope.models import create_dit
from axialrope.pipelines.cli import COMMANDS, HelpFormatter, command_parser, main
from axialrope.pipelines.dit.default_extrapolation import FALLBACK_EXTRAPOLATION, band_for_scale
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline


@pytest.fixture(scope="module")
def video_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipes") / "video"
    model = create_dit(
        "tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3, num_classes=0
    )
    AxialDiTPipeline.from_model(model).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_option_of_every_command_shows_its_default(command):
    _, parser = command_parser(command)
    formatter = HelpFormatter(parser.prog)
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction, argparse.BooleanOptionalAction)):
            continue
        if action.default is None and command == "train" and action.dest == "config":
            continue  # a file to read, or none
        if command == "train" and action.default is argparse.SUPPRESS:
            assert "(default: " in action.help, action.dest  # TrainConfig's field defaults, written out
            continue
        text = formatter._get_help_string(action) % {"default": action.default}
        assert "default" in text.lower(), f"{command} {action.option_strings}: {text!r}"
    assert "(default: 20)" in command_parser("sample")[1].format_help()  # --steps


def test_the_scheduler_flag_lists_every_scheduler_of_each_objective():
    from axialrope.pipelines.cli.sample import SCHEDULER_HELP
    from axialrope.pipelines.dit.schedulers import SCHEDULERS

    for objective, names in SCHEDULERS.items():
        listed = ", ".join(names).rsplit(", ", 1)
        assert f"{listed[0]} or {listed[1]}" in SCHEDULER_HELP, objective


def test_fps_is_a_flag_of_sample_only_and_documented():
    sample_help = command_parser("sample")[1].format_help()
    assert re.search(
        r"--fps FPS\s+frames per second of a video model's GIF and MP4, 0.01\s+to 100 \(default: 4.0\)", sample_help
    )
    with pytest.raises(SystemExit):
        command_parser("compare")[1].parse_args(["--fps", "3"])  # compare writes one PNG: no frame rate


def test_result_lines_name_the_method_once_and_the_frames_of_a_video(video_folder, tmp_path, capsys):
    assert (
        main(
            [
                "sample",
                "--classes",
                "circle",
                "--num",
                "1",
                "--steps",
                "1",
                "--height",
                "48",
                "--width",
                "48",
                "--extrapolation",
                "yarn+entropy",
                "--option",
                "beta_fast=16",
                "--out",
                str(tmp_path / "a.png"),
            ]
        )
        == 0
    )
    line = capsys.readouterr().out
    assert (
        f"wrote {tmp_path / 'a.png'} (1 image of 48x48; extrapolation yarn (beta_fast=16.0) + entropy scaling, "
        "1 step of euler) in " in line
    )
    assert (
        main(
            [
                "sample",
                "--model",
                str(video_folder),
                "--frames",
                "6",
                "--num",
                "2",
                "--steps",
                "2",
                "--scheduler",
                "dpm++",
                "--out",
                str(tmp_path / "clip.gif"),
            ]
        )
        == 0
    )
    # the default, auto, names what it resolved to: 6 frames of a 4-frame model (s = 1.5), the fallback's pick
    fallback = band_for_scale(FALLBACK_EXTRAPOLATION, 1.5)
    method = fallback["method"] + (" + entropy scaling" if fallback["entropy_scaling"] else "")
    assert f"(2 videos of 6 frames of 8x8; extrapolation auto: {method}, 2 steps of dpm++)" in capsys.readouterr().out
    assert Image.open(tmp_path / "clip.gif").n_frames == 6  # written by diffusers' export_to_gif
    assert (
        main(
            [
                "compare",
                "--model",
                str(video_folder),
                "--methods",
                "none",
                "riflex",
                "--num",
                "1",
                "--steps",
                "1",
                "--scheduler",
                "heun",
                "--out",
                str(tmp_path / "c.png"),
            ]
        )
        == 0
    )
    assert "(2 methods: none, riflex; each 1 video of 4 frames of 8x8, 1 step of heun)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command, scheduler, message",
    [
        (
            "sample",
            "ddim",
            "scheduler 'ddim' samples DDPM (epsilon) models, not this flow-matching model; for a "
            "flow-matching model choose one of euler (FlowMatchEulerDiscreteScheduler), heun",
        ),
        ("sample", "karras", "unknown scheduler 'karras'"),
        ("compare", "ddpm", "scheduler 'ddpm' samples DDPM (epsilon) models"),
    ],
)
def test_a_scheduler_that_does_not_fit_is_refused_with_exit_code_2(
    command, scheduler, message, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert main([command, "--steps", "1", "--num", "1", "--scheduler", scheduler, "--out", "x.png"]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


QUIET_RUN = """
import sys
import torch
from axialrope.pipelines.cli import main

out = sys.argv[1]
common = ["--steps", "1", "--num", "1"]
assert main(["train", "--max-steps", "2", "--batch-size", "2", "--resolution", "8", "--patch-size", "2",
             "--checkpointing-steps", "2", "--sample-steps", "1", "--samples-per-class", "1",
             "--output-dir", out + "/run"]) == 0
assert main(["sample", "--model", out + "/run", *common, "--out", out + "/run.png"]) == 0
assert main(["sample", "--model", out + "/run/checkpoints/checkpoint-000002", "--scheduler", "unipc", *common,
             "--out", out + "/checkpoint.png"]) == 0
assert main(["compare", "--methods", "none", "pi", *common, "--height", "48", "--width", "48",
             "--out", out + "/compare.png"]) == 0
# what torch.compile's CPU backend imports (the first time it compiles); it warns where nvcc is found but no GPU
import torch.utils.cpp_extension
assert torch.utils.cpp_extension.CUDA_HOME == "/usr/local" and not torch.cuda.is_available()  # so it did warn
"""


def _noise(stderr: str) -> list[str]:
    """stderr without progress bars."""
    return [part for part in re.split(r"[\r\n]", stderr) if part.strip() and not re.search(r"\d+%\|", part)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CUDA_HOME notice appears only where there is no GPU")
def test_a_normal_cpu_run_prints_no_warnings(tmp_path):
    environment = {**os.environ, "CUDA_HOME": "/usr/local", "OMP_NUM_THREADS": "1"}
    script = tmp_path / "quiet.py"
    script.write_text(QUIET_RUN)
    process = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert _noise(process.stderr) == []
    assert [line.split(" ")[0] for line in process.stdout.splitlines()] == ["trained", "wrote", "wrote", "wrote"]
