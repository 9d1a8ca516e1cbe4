"""Training: a tiny run writes everything, bad configs fail before training, NaN stops cleanly,
a SIGKILLed run resumes to the same weights, and two processes hold identical weights."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from axialrope.pipelines.cli import main as cli_main
from axialrope.pipelines.cli.train import add_arguments, config_from_args
from axialrope.pipelines.training import loop as train_loop
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.outputs import read_loss_log

REPO = Path(__file__).resolve().parents[2]
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
)


def tiny(tmp_path: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({**TINY, "output_dir": str(tmp_path / "run"), **overrides})


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / "diffusion_pytorch_model.safetensors")


def test_a_tiny_run_writes_models_samples_logs_and_limited_checkpoints(tmp_path):
    config = tiny(tmp_path, max_steps=6, checkpoints_total_limit=2)
    result = train_loop.train(config)
    out = Path(config.output_dir)
    assert result.steps == 6 and torch.isfinite(torch.tensor(result.final_loss))
    for name in ("config.yaml", "loss.jsonl", "loss.png", "samples.png", "model", "model_ema"):
        assert (out / name).exists(), name
    assert [p.name for p in sorted((out / "checkpoints").iterdir())] == ["checkpoint-000004", "checkpoint-000006"]
    assert [r["step"] for r in read_loss_log(out / "loss.jsonl")] == [1, 2, 3, 4, 5, 6]
    assert TrainConfig.from_file(out / "config.yaml") == config
    model, ema = weights(out / "model"), weights(out / "model_ema")
    assert model.keys() == ema.keys() and any(not torch.equal(model[k], ema[k]) for k in model)
    from axialrope.models import DiT

    loaded = DiT.from_pretrained(out / "model")
    assert loaded.config.num_classes == 6 and loaded.config.sample_size in (16, [16, 16], (16, 16))
    with Image.open(out / "samples.png") as grid:  # 6 classes x 1 sample of 16x16, 1-pixel padding
        assert grid.size == (1 + 17, 1 + 6 * 17)


@pytest.mark.parametrize(
    "overrides",
    [
        dict(data="moving_shapes", resolution=["4x8x8"], objective="ddpm", temporal_patch_size=2),
        dict(resolution=["16", "8x16"], gradient_accumulation_steps=2, position_encoding="sincos", max_steps=2),
        dict(data="textures", resolution=["16"], max_steps=2),
        dict(data="photographs", resolution=["16"], max_steps=2),
    ],
    ids=["video-ddpm", "buckets-accumulation-sincos", "textures", "photographs"],
)
def test_other_data_objectives_and_encodings_train(tmp_path, overrides):
    result = train_loop.train(tiny(tmp_path, **overrides))
    assert result.steps == tiny(tmp_path, **overrides).max_steps
    assert (Path(result.output_dir) / "samples.png").exists()


def test_the_final_sample_grid_of_a_ddpm_run_is_seeded_at_every_step(tmp_path):
    """DDPM draws fresh noise at each sampler step; the run's seed draws it, not the global generator."""
    from axialrope.models import create_dit
    from axialrope.pipelines.objectives import make_objective

    config = tiny(tmp_path, objective="ddpm", sample_steps=3)
    model = create_dit("tiny", sample_size=16, in_channels=3, num_classes=6)
    torch.manual_seed(1)
    first, _ = train_loop._final_samples(model, config, make_objective("ddpm"), "cpu")
    torch.manual_seed(2)
    second, _ = train_loop._final_samples(model, config, make_objective("ddpm"), "cpu")
    assert torch.equal(first, second)


def test_an_image_folder_with_two_aspect_buckets_trains(tmp_path):
    (tmp_path / "data").mkdir()  # beside the run's folder: an output_dir inside data_dir is refused
    for i in range(8):
        size = (24, 12) if i % 2 else (12, 12)  # (width, height): wide and square images
        Image.new("RGB", size, (30 * i, 100, 200)).save(tmp_path / "data" / f"{i}.png")
    config = tiny(tmp_path, data="image_folder", data_dir=str(tmp_path / "data"), resolution=["8", "8x16"], max_steps=2)
    assert train_loop.train(config).steps == 2


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(model_size="huge"), "model_size must be one of"),
        (dict(resolution=["16x18"], patch_size=4), "width 18 is not divisible by patch_size 4"),
        (dict(data="moving_shapes", resolution=["3x16x16"], temporal_patch_size=2), "not divisible by temporal_patch"),
        (dict(data="image_folder"), "data_dir is required"),
        (dict(data="image_folder", data_dir="/nonexistent/folder"), "does not exist"),
        (dict(learning_rate=-1.0), "learning_rate"),
        (dict(mixed_precision="fp8"), "mixed_precision"),
        (dict(resolution=["16x16x16"]), "needs video data"),
        (dict(init_from="/nonexistent/model"), "init_from '/nonexistent/model' is neither"),
        (dict(frame_noise_correlation=0.5), "frame_noise_correlation needs video data"),
        (dict(data="moving_shapes", resolution=["4x16x16"], frame_noise_correlation=-0.1), r"in \[0, 1\)"),
        (dict(rope_theta=[100.0, 100.0, 100.0]), r"rope_theta must be one number above 1 or 2 \(one per axis\)"),
        (dict(rope_theta=[0.5]), "rope_theta must be one number above 1"),
        (dict(scene_rotation=-0.5), r"scene_rotation: rotation must be a number of turns in \[0, 1\]"),
        (dict(data="image_folder", data_dir=".", scene_rotation=1.0), "scene_rotation is only read with data=shapes"),
    ],
)
def test_bad_configs_fail_before_training(tmp_path, overrides, message):
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        train_loop.train(tiny(tmp_path, **overrides))
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(torch.accelerator.is_available(), reason="fp16 is refused only where there is no GPU")
def test_fp16_on_a_cpu_is_refused_rather_than_silently_float32(tmp_path):
    with pytest.raises(ValueError, match="fp16 needs a GPU"):
        train_loop.train(tiny(tmp_path, mixed_precision="fp16"))
    assert not (tmp_path / "run").exists()


def test_empty_folder_and_unreadable_image_fail_before_training(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no images"):
        train_loop.train(tiny(tmp_path, data="image_folder", data_dir=str(tmp_path / "empty")))
    (tmp_path / "bad").mkdir()
    Image.new("RGB", (16, 16)).save(tmp_path / "bad" / "ok.png")
    (tmp_path / "bad" / "truncated.jpg").write_bytes(b"\xff\xd8\xff garbage")
    with pytest.raises(ValueError, match="truncated.jpg"):
        train_loop.train(tiny(tmp_path, data="image_folder", data_dir=str(tmp_path / "bad")))
    assert not (tmp_path / "run").exists()


def test_rope_theta_is_one_base_for_all_axes_or_one_per_axis(tmp_path):
    video = dict(data="moving_shapes", resolution=["4x16x16"])
    per_axis = train_loop.build_model(tiny(tmp_path, **video, rope_theta=[30, 10000, 10000]).validate(), num_classes=6)
    shared = train_loop.build_model(tiny(tmp_path, **video, rope_theta=[30]).validate(), num_classes=6)
    assert per_axis.config.rope_theta == (30.0, 10000.0, 10000.0) and shared.config.rope_theta == 30.0
    time_frequencies = [f for f, _ in per_axis.rope.embedding.axis_frequencies()][0]
    exponents = torch.arange(len(time_frequencies), dtype=time_frequencies.dtype) / len(time_frequencies)
    torch.testing.assert_close(time_frequencies, 30.0**-exponents)


def test_a_video_run_starts_from_an_image_run_inflated(tmp_path):
    from axialrope.models import DiT
    from axialrope.models.axial_dit.inflate import inflate_from_image

    image_run = train_loop.train(tiny(tmp_path, max_steps=2, output_dir=str(tmp_path / "image")))
    image = DiT.from_pretrained(image_run.output_dir / "model_ema")
    video = tiny(
        tmp_path,
        data="moving_shapes",
        resolution=["4x16x16"],
        init_from=str(tmp_path / "image" / "model_ema"),
        max_steps=1,
        learning_rate=1e-12,
        ema_decay=0,
    )  # a step too small to move the weights
    result = train_loop.train(video)
    expected = train_loop.build_model(video, num_classes=6)
    inflate_from_image(image, expected)
    for name, tensor in expected.state_dict().items():
        torch.testing.assert_close(result.model.state_dict()[name], tensor, atol=1e-6, rtol=0, msg=name)
    wider = tiny(
        tmp_path,
        data="moving_shapes",
        resolution=["4x16x16"],
        init_from=str(tmp_path / "image" / "model_ema"),
        model_size="mini",
        output_dir=str(tmp_path / "wider"),
    )
    with pytest.raises(ValueError, match="differ in hidden_size"):
        train_loop.train(wider)
    assert not (tmp_path / "wider").exists()


def test_unknown_config_keys_and_cli_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="did you mean 'max_steps'"):
        TrainConfig.from_dict({"max_step": 3})
    assert cli_main(["train", "--model-size", "huge", "--output-dir", str(tmp_path / "run")]) == 2
    assert "model_size must be one of" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_flags_override_the_config_file_which_overrides_defaults(tmp_path):
    import argparse

    (tmp_path / "run.yaml").write_text("max_steps: 7\nbatch_size: 3\nresolution: 16x32\ncheckpoints_total_limit: 5\n")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        [
            "--config",
            str(tmp_path / "run.yaml"),
            "--batch-size",
            "5",
            "--checkpoints-total-limit",
            "none",
            "--random-flip",
            "--resolution",
            "32",
            "16x32",
        ]
    )
    config = config_from_args(args)
    assert (config.max_steps, config.batch_size, config.checkpoints_total_limit) == (7, 5, None)
    assert config.random_flip is True and config.resolution == ["32", "16x32"] and config.seed == 0
    (tmp_path / "run.json").write_text(json.dumps({"data": "moving_shapes", "frames": 4}))
    config = config_from_args(parser.parse_args(["--config", str(tmp_path / "run.json")]))
    assert [str(b) for b in config.buckets] == ["4x32x32"]


def test_a_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    real_loss, calls = train_loop.training_loss, []

    def loss_that_explodes(*args, **kwargs):
        calls.append(1)
        loss = real_loss(*args, **kwargs)
        return loss * float("nan") if len(calls) == 3 else loss

    monkeypatch.setattr(train_loop, "training_loss", loss_that_explodes)
    config = tiny(tmp_path, max_steps=6)
    with pytest.raises(train_loop.NonFiniteLossError, match=r"loss is nan at step 3.*checkpoint-000002"):
        train_loop.train(config)
    checkpoints = sorted(p.name for p in (Path(config.output_dir) / "checkpoints").iterdir())
    assert checkpoints == ["checkpoint-000002"]
    saved = load_file(Path(config.output_dir) / "checkpoints" / "checkpoint-000002" / "model.safetensors")
    assert all(torch.isfinite(v).all() for v in saved.values())


KILLED_RUN = """
import json, os, signal, sys
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loop import train

def die_after(step, folder):
    if step == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: as hard as a crash gets

train(TrainConfig.from_dict(json.loads(sys.argv[1])), on_checkpoint=die_after)
"""


def _environment() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


def _asymmetric_images(folder: Path) -> dict:
    """12 images, half square and half wide, whose left half is red: flips and crops show."""
    folder.mkdir()
    for i in range(12):
        width = 24 if i % 2 else 12
        pixels = torch.full((12, width, 3), 20 * i, dtype=torch.uint8)
        pixels[:, : width // 2, 0] = 255
        Image.fromarray(pixels.numpy()).save(folder / f"{i:02d}.png")
    return dict(data="image_folder", data_dir=str(folder), resolution=["8", "8x16"], random_flip=True)


@pytest.mark.slow
@pytest.mark.parametrize("data", ["shapes", "folder"])
def test_a_run_killed_after_a_checkpoint_resumes_to_the_same_weights(tmp_path, data):
    # The folder run also draws random flips from the global RNG (restored per process by
    # load_state) and, with 2 full batches per epoch, crosses epochs and resumes mid-epoch.
    source = _asymmetric_images(tmp_path / "images") if data == "folder" else {}
    common = dict(TINY, max_steps=6, gradient_accumulation_steps=2, checkpoints_total_limit=None, **source)
    killed = dict(common, output_dir=str(tmp_path / "killed"))
    script = tmp_path / "killed_run.py"
    script.write_text(KILLED_RUN)
    process = subprocess.run(
        [sys.executable, str(script), json.dumps(killed), "4"],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == -9, process.stderr[-2000:]
    assert not (tmp_path / "killed" / "model").exists()  # it really died before the end

    resumed = train_loop.train(TrainConfig.from_dict(dict(killed, resume="latest")))
    straight = train_loop.train(TrainConfig.from_dict(dict(common, output_dir=str(tmp_path / "straight"))))
    assert resumed.steps == straight.steps == 6
    for folder in ("model", "model_ema"):
        a, b = weights(tmp_path / "killed" / folder), weights(tmp_path / "straight" / folder)
        assert all(torch.equal(a[k], b[k]) for k in a), folder

    def strip(records):
        return [(r["step"], r["loss"], r["lr"]) for r in records]

    assert strip(read_loss_log(tmp_path / "killed" / "loss.jsonl")) == strip(
        read_loss_log(tmp_path / "straight" / "loss.jsonl")
    )


def test_a_half_written_checkpoint_is_never_latest(tmp_path):
    from axialrope.pipelines.training.checkpoints import latest_checkpoint, resolve_resume

    root = tmp_path / "checkpoints"
    (root / "checkpoint-000004").mkdir(parents=True)
    (root / "checkpoint-000006.tmp").mkdir()
    (root / "checkpoint-000002").mkdir()
    assert latest_checkpoint(root).name == "checkpoint-000004"
    assert resolve_resume("latest", tmp_path / "nothing") is None
    with pytest.raises(FileNotFoundError, match="resume"):
        resolve_resume(str(tmp_path / "missing"), root)


TWO_PROCESS_RUN = """
import json, os, sys, torch
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loop import train

result = train(TrainConfig.from_dict(json.loads(sys.argv[1])))
rank = int(os.environ["RANK"])  # set by accelerate launch
weights = {k: v.clone() for k, v in result.model.state_dict().items()}
torch.save({"weights": weights, "is_main": result.is_main_process}, sys.argv[2] + f"/weights-{rank}.pt")
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_cpu_processes_hold_identical_weights_and_only_the_main_one_writes(tmp_path):
    config = dict(TINY, output_dir=str(tmp_path / "run"), batch_size=2)
    script = tmp_path / "two.py"
    script.write_text(TWO_PROCESS_RUN)
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(_free_port()),
        str(script),
        json.dumps(config),
        str(tmp_path),
    ]
    # accelerate runs several CPU processes (gloo) when told to use the CPU through the environment
    environment = {**_environment(), "ACCELERATE_USE_CPU": "true"}
    process = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    ranks = [torch.load(tmp_path / f"weights-{rank}.pt") for rank in range(2)]
    assert [r["is_main"] for r in ranks] == [True, False]
    a, b = ranks[0]["weights"], ranks[1]["weights"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    from accelerate.utils import set_seed

    set_seed(0)
    initial = train_loop.build_model(TrainConfig.from_dict(config), 6).state_dict()
    assert any(not torch.equal(a[k], initial[k]) for k in a)  # it did train
    assert [r["step"] for r in read_loss_log(tmp_path / "run" / "loss.jsonl")] == [1, 2, 3, 4]  # written once
    assert (process.stderr + process.stdout).count("train:   0%") == 1  # one progress bar, the main process's
