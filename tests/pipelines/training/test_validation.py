"""Validation samples: every N steps the EMA weights sample the validation classes at the trained size and
beyond it; the files are the run's pipeline sampled from the same seed; the training is untouched by them."""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from axialrope.pipelines.training import loop as train_loop
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.outputs import read_loss_log, save_sample_grid
from axialrope.pipelines.training.validation import validation_sizes

TINY = dict(  # a handful of steps of the tiny model at 16x16: seconds on a CPU
    resolution=["16"],
    batch_size=4,
    max_steps=4,
    checkpointing_steps=2,
    log_every=1,
    lr_warmup_steps=1,
    sample_steps=2,
    samples_per_class=1,
    dataset_size=64,
    report_to="none",
)


def tiny(tmp_path: Path, name: str = "run", **overrides) -> TrainConfig:
    return TrainConfig.from_dict({**TINY, "output_dir": str(tmp_path / name), **overrides})


def size_of(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        return image.size


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).astype(int)


def flipped_images(folder: Path) -> dict:
    """An image folder of two classes read with random flips, which draw on the global generator: a
    validation that drew on it would change the data the run trains on."""
    for i in range(8):
        image = torch.full((16, 16, 3), 25 * i, dtype=torch.uint8)
        image[:, :8, i % 3] = 255  # a left half that a flip moves
        (folder / f"class{i % 2}").mkdir(parents=True, exist_ok=True)
        Image.fromarray(image.numpy()).save(folder / f"class{i % 2}" / f"{i}.png")
    return dict(data="image_folder", data_dir=str(folder), random_flip=True)


def test_a_run_with_validation_ends_with_the_same_weights_as_one_without(tmp_path):
    data = flipped_images(tmp_path / "images")
    plain = train_loop.train(tiny(tmp_path, "plain", **data))
    sampled = train_loop.train(
        tiny(tmp_path, "sampled", **data, validation_steps=1, validation_scales=[2], validation_num_inference_steps=2)
    )
    assert sorted(p.name for p in (sampled.output_dir / "validation").iterdir()) == [
        "step-000001",
        "step-000002",
        "step-000003",
        "step-000004",
    ]
    assert not (plain.output_dir / "validation").exists()
    assert [r["loss"] for r in read_loss_log(plain.output_dir / "loss.jsonl")] == [
        r["loss"] for r in read_loss_log(sampled.output_dir / "loss.jsonl")
    ]
    for folder in ("model", "model_ema"):
        a = load_file(plain.output_dir / folder / "diffusion_pytorch_model.safetensors")
        b = load_file(sampled.output_dir / folder / "diffusion_pytorch_model.safetensors")
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), folder


def test_the_samples_are_the_ema_pipeline_at_the_trained_size_and_beyond_with_auto(tmp_path):
    from axialrope.pipelines.dit.runs import load_run_pipeline

    config = tiny(tmp_path, validation_steps=2, validation_scales=[2], validation_num_inference_steps=2)
    train_loop.train(config)
    run = Path(config.output_dir)
    last = run / "validation" / "step-000004"
    # 6 classes, one sample each, side by side with 1-pixel padding; the grid: a row per class, a column per size
    assert size_of(last / "1x.png") == (1 + 6 * 17, 18) and size_of(last / "2x.png") == (1 + 6 * 33, 34)
    assert size_of(last / "grid.png") == (1 + 2 * 33, 1 + 6 * 33)
    pipe = load_run_pipeline(run)  # the finished run's pipeline: the EMA weights of step 4
    for name, side in (("1x", 16), ("2x", 32)):
        samples = pipe(
            class_labels=list(range(6)),
            height=side,
            width=side,
            num_inference_steps=2,
            generator=torch.Generator().manual_seed(config.seed),
            output_type="latent",
            extrapolation="auto",
        ).images
        save_sample_grid(samples, tmp_path / f"{name}.png", per_row=6)
        assert np.array_equal(pixels(tmp_path / f"{name}.png"), pixels(last / f"{name}.png")), name


def test_an_unconditional_video_run_samples_four_videos_at_each_size(tmp_path):
    config = tiny(
        tmp_path,
        data="moving_shapes",
        resolution=["4x8x8"],
        temporal_patch_size=2,
        max_steps=2,
        class_conditional=False,
        validation_steps=2,
        validation_scales=[1.5],
        validation_num_inference_steps=1,
    )
    train_loop.train(config)
    folder = Path(config.output_dir) / "validation" / "step-000002"
    # a video per row, its 4 frames left to right; the grid: each video's middle frame, at 12x12 for both sizes
    assert size_of(folder / "1x.png") == (1 + 4 * 9, 1 + 4 * 9)
    assert size_of(folder / "1.5x.png") == (1 + 4 * 13, 1 + 4 * 13)
    assert size_of(folder / "grid.png") == (1 + 2 * 13, 1 + 4 * 13)


@pytest.mark.parametrize(
    "resolution, scales, expected",
    [
        (["16"], [2], [("1x", (16, 16)), ("2x", (32, 32))]),
        (["16x8"], [1.5, 2.3], [("1x", (16, 8)), ("1.5x", (24, 12)), ("2.3x", (36, 18))]),  # whole patches of 2
        (["4x8x8"], [3], [("1x", (4, 8, 8)), ("3x", (4, 24, 24))]),  # frames kept
    ],
)
def test_validation_sizes_scale_the_first_buckets_side_in_whole_patches(tmp_path, resolution, scales, expected):
    data = {"data": "moving_shapes"} if len(resolution[0].split("x")) == 3 else {}
    config = tiny(tmp_path, resolution=resolution, validation_steps=1, validation_scales=scales, **data)
    assert validation_sizes(config.validate()) == expected


def test_the_flags_set_the_fields_and_a_resume_may_change_them(tmp_path):
    import argparse
    import dataclasses

    from axialrope.pipelines.cli.train import add_arguments, config_from_args
    from axialrope.pipelines.training.resume import resume_changes

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = config_from_args(
        parser.parse_args(
            [
                "--validation-steps",
                "100",
                "--validation-scales",
                "1.5",
                "2",
                "--validation-num-inference-steps",
                "10",
                "--report-to",
                "none",
                "--output-dir",
                str(tmp_path / "run"),
            ]
        )
    )
    assert (
        config.validation_steps,
        config.validation_scales,
        config.validation_num_inference_steps,
        config.report_to,
    ) == (100, [1.5, 2.0], 10, "none")
    recorded = dataclasses.replace(
        config,
        validation_steps=None,
        validation_scales=[],  # as the run started
        validation_num_inference_steps=None,
        report_to="auto",
    ).run_dict()
    assert set(resume_changes(recorded, config, "checkpoint-000002")) == {
        "validation_steps",
        "validation_scales",
        "validation_num_inference_steps",
        "report_to",
    }
