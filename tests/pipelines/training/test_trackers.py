"""Trackers: a real tensorboard run whose event files, read back, hold loss.jsonl step by step and the
validation images; a resumed run logs each step once; --report-to picks the trackers installed."""

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from axialrope.pipelines.training import loop as train_loop
from axialrope.pipelines.training import tracking
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.outputs import read_loss_log

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

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
    report_to="tensorboard",
)


def tiny(tmp_path: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({**TINY, "output_dir": str(tmp_path / "run"), **overrides})


def events(run: Path) -> EventAccumulator:
    """The run's tensorboard events as tensorboard reads them (every scalar and image kept)."""
    return EventAccumulator(str(run / "logs" / tracking.PROJECT), size_guidance={"scalars": 0, "images": 0}).Reload()


def scalars(accumulator: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(event.step, event.value) for event in accumulator.Scalars(tag)]


def as_float32(value: float) -> float:
    return float(np.float32(value))


def test_the_scalars_equal_the_loss_log_step_by_step_and_the_images_come_at_the_validation_steps(tmp_path):
    config = tiny(
        tmp_path, max_steps=5, log_every=2, validation_steps=2, validation_scales=[2], validation_num_inference_steps=2
    )
    train_loop.train(config)
    run, accumulator = Path(config.output_dir), events(Path(config.output_dir))
    records = read_loss_log(run / "loss.jsonl")
    assert [r["step"] for r in records] == [2, 4, 5]  # the log interval, and the last step
    assert scalars(accumulator, "train/loss") == [(r["step"], as_float32(r["loss"])) for r in records]
    assert scalars(accumulator, "train/lr") == [(r["step"], as_float32(r["lr"])) for r in records]
    norms = scalars(accumulator, "train/grad_norm")
    assert [step for step, _ in norms] == [2, 4, 5] and all(norm > 0 for _, norm in norms)
    for name, side in (("1x", 16), ("2x", 32)):
        logged = accumulator.Images(f"validation/{name}")
        assert [event.step for event in logged] == [2, 4]
        for event in logged:  # the six classes side by side, the pixels of the PNG the run wrote
            tiles = np.asarray(Image.open(io.BytesIO(event.encoded_image_string)).convert("RGB"))
            assert tiles.shape == (side, 6 * side, 3)
            png = np.asarray(Image.open(run / "validation" / f"step-{event.step:06d}" / f"{name}.png").convert("RGB"))
            for i in range(6):  # the PNG's tiles sit in a 1-pixel padding
                tile = png[1 : 1 + side, 1 + i * (side + 1) : 1 + i * (side + 1) + side].astype(int)
                assert np.abs(tile - tiles[:, i * side : (i + 1) * side].astype(int)).max() <= 1


def test_a_resumed_run_logs_each_step_once(tmp_path, monkeypatch):
    """The first invocation stops in step 4, after logging step 3 and its validation; the resume from the
    checkpoint of step 2 logs steps 3 to 6 again, and tensorboard keeps only the resumed run's."""
    config = tiny(tmp_path, max_steps=6, validation_steps=3, validation_num_inference_steps=1)
    real_loss, calls = train_loop.training_loss, []

    def loss_that_stops(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("stopped in step 4")
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(train_loop, "training_loss", loss_that_stops)
    with pytest.raises(RuntimeError, match="stopped in step 4"):
        train_loop.train(config)
    run = Path(config.output_dir)
    assert [event.step for event in events(run).Scalars("train/loss")] == [1, 2, 3]
    monkeypatch.setattr(train_loop, "training_loss", real_loss)
    train_loop.train(TrainConfig.from_dict({**config.to_dict(), "resume": "latest"}))
    accumulator, records = events(run), read_loss_log(run / "loss.jsonl")
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert scalars(accumulator, "train/loss") == [(r["step"], as_float32(r["loss"])) for r in records]
    assert [event.step for event in accumulator.Images("validation/1x")] == [3, 6]


def test_report_to_none_writes_no_logs_and_trains_the_same_weights(tmp_path):
    tracked = train_loop.train(tiny(tmp_path, output_dir=str(tmp_path / "tracked"), max_grad_norm=0.0))
    untracked = train_loop.train(
        tiny(tmp_path, output_dir=str(tmp_path / "untracked"), max_grad_norm=0.0, report_to="none")
    )
    assert (tracked.output_dir / "logs").is_dir() and not (untracked.output_dir / "logs").exists()
    assert read_loss_log(tracked.output_dir / "loss.jsonl") != []
    for (name, a), b in zip(tracked.model.state_dict().items(), untracked.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name  # measuring the norm without clipping leaves the gradients alone


def test_report_to_auto_is_tensorboard_where_installed_else_none(monkeypatch):
    assert tracking.trackers_for("auto") == ["tensorboard"]
    assert tracking.trackers_for("none") == []
    monkeypatch.setattr(tracking, "installed_trackers", lambda: ["wandb"])
    assert tracking.trackers_for("auto") == []
    assert tracking.trackers_for("all") == ["wandb"]
    assert tracking.trackers_for("wandb") == ["wandb"]


def test_a_resume_continues_the_same_wandb_run_and_purges_tensorboard_past_its_checkpoint(tmp_path):
    fresh = tracking.tracker_init_kwargs(["tensorboard", "wandb"], tmp_path, start_step=0)
    resumed = tracking.tracker_init_kwargs(["tensorboard", "wandb"], tmp_path, start_step=40)
    assert fresh["tensorboard"] == {"purge_step": 1} and resumed["tensorboard"] == {"purge_step": 41}
    assert resumed["wandb"]["id"] == fresh["wandb"]["id"] and resumed["wandb"]["resume"] == "allow"
    again = tracking.tracker_init_kwargs(["wandb"], tmp_path, start_step=0)
    assert again["wandb"]["id"] != fresh["wandb"]["id"]  # a fresh start is a new wandb run
