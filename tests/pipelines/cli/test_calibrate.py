"""`axialrope calibrate` end to end: a tiny run trained on a folder the test writes is calibrated on it; the run's
pipeline then records the picks, and `axialrope sample --model run` samples with them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from PIL import Image

from axialrope.pipelines.cli import main
from axialrope.pipelines.training import loop as train_loop
from axialrope.pipelines.training.config import TrainConfig

TINY = dict(
    resolution=["8"],
    batch_size=4,
    max_steps=2,
    checkpointing_steps=2,
    log_every=1,
    lr_warmup_steps=1,
    sample_steps=1,
    samples_per_class=1,
    patch_size=2,
)
QUICK = ["--num", "2", "--steps", "1", "--seeds", "2"]


def write_photos(root: Path, large: int = 6, small: int = 2, side: int = 24) -> Path:
    """Two class folders of smooth random pictures: `large` of side x side per class, and `small` of 10x10 (too
    small for 12x12 and up)."""
    generator = torch.Generator().manual_seed(0)
    for name in ("dots", "waves"):
        (root / name).mkdir(parents=True)
        for index in range(large + small):
            size = side if index < large else 10
            coarse = torch.rand(3, 4, 4, generator=generator)
            pixels = torch.nn.functional.interpolate(coarse[None], size=(size, size), mode="bilinear")[0]
            pixels = (pixels + 0.2 * torch.rand(3, size, size, generator=generator)).clamp(0, 1)
            array = (pixels * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
            Image.fromarray(array).save(root / name / f"{index}.png")
    return root


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A tiny finished run (8x8, patch 2) on the pictures of `write_photos`."""
    root = tmp_path_factory.mktemp("calibrate")
    data = write_photos(root / "photos")
    train_loop.train(
        TrainConfig.from_dict({**TINY, "data": "image_folder", "data_dir": str(data), "output_dir": str(root / "run")})
    )
    return root / "run"


@pytest.fixture
def run(trained, tmp_path) -> Path:
    """A copy of the trained run, to calibrate (its data folder stays where the run's config names it)."""
    import shutil

    return Path(shutil.copytree(trained, tmp_path / "run"))


@pytest.fixture(scope="module")
def trained_at_its_size(tmp_path_factory) -> Path:
    """A tiny finished run (8x8, patch 2) on pictures of 8x8 only: none is large enough for any larger size."""
    root = tmp_path_factory.mktemp("calibrate-small")
    data = write_photos(root / "photos", large=4, small=0, side=8)
    train_loop.train(
        TrainConfig.from_dict({**TINY, "data": "image_folder", "data_dir": str(data), "output_dir": str(root / "run")})
    )
    return root / "run"


def bands_of(folder: Path) -> list[dict]:
    return json.loads((folder / "model_index.json").read_text())["default_extrapolation"]


def test_calibrate_writes_the_picks_into_the_run_and_sample_names_them(run, tmp_path, capsys):
    assert main(["calibrate", "--model", str(run), "--scales", "1.5", "2", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "| real (floor) |" in out and "| none |" in out and "| yarn+entropy |" in out  # the table, all methods
    assert "12x12: 4 of 16 reference images are too small" in out  # the 10x10 ones, counted
    result = json.loads((run / "calibration" / "calibration.json").read_text())
    assert (result["kind"], result["version"], result["reference"]) == ("axialrope-calibration", 1, "real")
    assert result["trained_grid"] == [4, 4] and result["trained_size"] == [8, 8]
    picks = [scale["best"] for scale in result["scales"]]
    for folder in (run / "pipeline", run / "pipeline-config"):  # the run and its checkpoints load these
        bands = bands_of(folder)
        assert [b["up_to_scale"] for b in bands] == [1.75, None]
        assert [b["method"] + ("+entropy" if b["entropy_scaling"] else "") for b in bands] == picks
        assert all("axialrope calibrate" in b["measured"] for b in bands)
    assert (run / "calibration" / "calibration.md").read_text().startswith("# Calibration on")
    assert Image.open(run / "calibration" / "calibration-12x12.png").size[1] > 12 * 19  # real + 18 method rows
    assert (run / "calibration" / "calibration-16x16.png").is_file()
    # sample at 2x: auto names the pick of the 2x band, from the run and from its checkpoint
    name = picks[1].removesuffix("+entropy") + (" + entropy scaling" if picks[1].endswith("+entropy") else "")
    for model in (run, run / "checkpoints" / "checkpoint-000002"):
        assert (
            main(
                [
                    "sample",
                    "--model",
                    str(model),
                    "--height",
                    "16",
                    "--width",
                    "16",
                    "--num",
                    "1",
                    "--steps",
                    "1",
                    "--out",
                    str(tmp_path / "s.png"),
                ]
            )
            == 0
        )
        assert f"extrapolation auto: {name}," in capsys.readouterr().out


def test_the_benchmark_and_calibrate_agree_on_a_cell(run, tmp_path):
    """The values calibration.json holds per seed are the cells' own: measured again with the one cell
    implementation on the same references, they are equal."""
    from axialrope.pipelines.dit.runs import load_run_pipeline
    from axialrope.pipelines.evaluation.cells import Method, measure_cell
    from axialrope.pipelines.evaluation.references import ReferenceImages

    assert (
        main(
            [
                "calibrate",
                "--model",
                str(run),
                "--scales",
                "2",
                "--methods",
                "pi",
                "none+entropy",
                *QUICK,
                "--out",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    result = json.loads((tmp_path / "out" / "calibration.json").read_text())["scales"][0]
    pipe = load_run_pipeline(run)
    pipe.set_progress_bar_config(disable=True)
    references = ReferenceImages(_data_dir(run), pipe.config.class_names, pipe.transformer.config.num_classes)
    for label in ("pi", "none+entropy"):
        again = [
            measure_cell(
                pipe, Method.from_label(label), references.draw((16, 16), seed, 2), 1, 2.0, seed
            ).distance.detail
            for seed in range(2)
        ]
        assert again == result["values"][label]


def _data_dir(run: Path) -> str:
    import yaml

    return yaml.safe_load((run / "config.yaml").read_text())["data_dir"]


def test_methods_and_reference_dir_are_taken_as_given(run, tmp_path, capsys):
    other = write_photos(tmp_path / "flat_parent", large=3, small=0, side=32)
    flat = tmp_path / "flat"
    flat.mkdir()
    for path in other.rglob("*.png"):  # a flat folder: the model's classes are drawn in turn
        path.rename(flat / f"{path.parent.name}-{path.name}")
    assert (
        main(
            [
                "calibrate",
                "--model",
                str(run),
                "--reference-dir",
                str(flat),
                "--scales",
                "3",
                "--methods",
                "none",
                "yarn",
                *QUICK,
            ]
        )
        == 0
    )
    bands = bands_of(run / "pipeline")
    assert len(bands) == 1 and bands[0]["up_to_scale"] is None and bands[0]["method"] in ("none", "yarn")
    assert "24x24 (3x)" in bands[0]["measured"] and str(flat) in bands[0]["measured"]


@pytest.mark.slow
def test_train_with_calibrate_scales_then_sample(tmp_path):
    """`axialrope train --calibrate-scales 2` as its own process: the finished run records the pick."""
    data = write_photos(tmp_path / "photos")
    flags = [f"--{k.replace('_', '-')}={v[0] if isinstance(v, list) else v}" for k, v in TINY.items()]
    command = [
        sys.executable,
        "-m",
        "axialrope.pipelines.cli",
        "train",
        *flags,
        "--data",
        "image_folder",
        "--data-dir",
        str(data),
        "--output-dir",
        str(tmp_path / "run"),
        "--calibrate-scales",
        "2",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    bands = bands_of(tmp_path / "run" / "pipeline")
    assert len(bands) == 1 and "axialrope calibrate" in bands[0]["measured"]
    assert bands_of(tmp_path / "run" / "pipeline-config") == bands
    assert (tmp_path / "run" / "calibration" / "calibration-16x16.png").is_file()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "axialrope.pipelines.cli",
            "sample",
            "--model",
            str(tmp_path / "run"),
            "--height",
            "16",
            "--width",
            "16",
            "--num",
            "1",
            "--steps",
            "1",
            "--out",
            str(tmp_path / "s.png"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    entropy = " + entropy scaling" if bands[0]["entropy_scaling"] else ""
    assert f"extrapolation auto: {bands[0]['method']}{entropy}," in done.stdout, done.stdout + done.stderr


def test_a_run_trained_at_its_size_only_is_calibrated_without_real_images(trained_at_its_size, tmp_path, capsys):
    """--scales 2 asks for 16x16; every image of the run's folder is 8x8: the run is calibrated by the
    reference-free score, says so on the screen, in calibration.md and calibration.json, and records its pick,
    which `axialrope sample` then uses at 16x16."""
    import shutil

    run = Path(shutil.copytree(trained_at_its_size, tmp_path / "run"))
    assert main(["calibrate", "--model", str(run), "--scales", "2", "--methods", "none", "pi", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "too few real images: 0 of the 8 images" in out and "16x16" in out
    assert "reference-free score" in out and "| own at 1x (floor) |" in out
    result = json.loads((run / "calibration" / "calibration.json").read_text())
    assert (result["kind"], result["version"], result["reference"]) == ("axialrope-calibration", 1, "self")
    assert result["trained_grid"] == [4, 4] and result["trained_size"] == [8, 8]
    assert result["scales"][0]["size"] == [16, 16] and set(result["scales"][0]["parts"]) == {"none", "pi"}
    assert (run / "calibration" / "calibration.md").read_text().startswith("# Calibration by the reference-free score")
    assert (run / "calibration" / "calibration-16x16.png").is_file()
    for folder in (run / "pipeline", run / "pipeline-config"):
        bands = bands_of(folder)
        assert bands == result["default_extrapolation"] and len(bands) == 1 and "aspect" not in bands[0]
        assert bands[0]["method"] + ("+entropy" if bands[0]["entropy_scaling"] else "") == result["scales"][0]["best"]
        assert "reference-free score" in bands[0]["measured"]
    argv = ["sample", "--model", str(run), "--height", "16", "--width", "16", "--num", "1", "--steps", "1"]
    assert main([*argv, "--out", str(tmp_path / "s.png")]) == 0
    assert f"extrapolation auto: {bands[0]['method']}" in capsys.readouterr().out


def test_a_run_of_procedural_data_is_calibrated_without_real_images(run, capsys):
    """A run that records no image folder (here: its config names procedural data) needs no --reference-dir."""
    config = run / "config.yaml"
    config.write_text(config.read_text().replace("data: image_folder", "data: shapes"))
    assert main(["calibrate", "--model", str(run), "--scales", "2", "--methods", "pi", *QUICK]) == 0
    out = capsys.readouterr().out
    assert "no --reference-dir, and this model was trained on data='shapes'" in out
    assert json.loads((run / "calibration" / "calibration.json").read_text())["reference"] == "self"


def test_a_video_pipeline_is_calibrated_in_time(tmp_path, capsys):
    """A video model's pipeline folder: --scales lengthen the clip, scored without real clips; the pick is recorded
    in its model_index.json."""
    from axialrope.models import create_dit
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    torch.manual_seed(0)
    model = create_dit("tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3)
    AxialDiTPipeline.from_model(model.eval()).save_pretrained(tmp_path / "video")
    argv = ["calibrate", "--model", str(tmp_path / "video"), "--scales", "2", "--methods", "none", "riflex", *QUICK]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "a video model: calibrating with the reference-free score" in out and "| riflex |" in out
    result = json.loads((tmp_path / "video-calibration" / "calibration.json").read_text())
    assert result["reference"] == "self" and result["trained_grid"] == [2, 4, 4]
    assert result["scales"][0]["size"] == [8, 8, 8]
    assert (tmp_path / "video-calibration" / "calibration-8x8x8.png").is_file()
    assert bands_of(tmp_path / "video") == result["default_extrapolation"]
