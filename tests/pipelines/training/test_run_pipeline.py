"""A training run writes a pipeline: the run folder, its checkpoints and its model folders load as
AxialDiTPipelines with the class names of the data, for `axialrope sample --model` and `--init-from`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image
from safetensors.torch import load_file

from axialrope.pipelines.cli import main
from axialrope.pipelines.dit.bundled import load_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.dit.runs import load_run_pipeline
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


def _class_folders(root: Path) -> Path:
    """Images in two class folders whose id order (sorted names) differs from the order they were made in."""
    for name, colour in (("zebra", (0, 0, 0)), ("apple", (255, 0, 0))):
        (root / name).mkdir(parents=True)
        for i in range(4):
            Image.new("RGB", (8, 8), tuple(min(255, c + 20 * i) for c in colour)).save(root / name / f"{i}.png")
    return root


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    data = _class_folders(root / "data")
    config = TrainConfig.from_dict(
        {**TINY, "data": "image_folder", "data_dir": str(data), "output_dir": str(root / "run")}
    )
    train_loop.train(config)
    return root / "run"


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / "diffusion_pytorch_model.safetensors")


def _same(model, weights: dict[str, torch.Tensor]) -> bool:
    state = model.state_dict()
    return state.keys() == weights.keys() and all(torch.equal(state[k].float(), weights[k].float()) for k in state)


def test_a_run_leaves_a_pipeline_of_its_ema_weights_with_its_class_names(run):
    index = json.loads((run / "pipeline" / "model_index.json").read_text())
    assert index["_class_name"] == "AxialDiTPipeline" and index["class_names"] == ["apple", "zebra"]
    assert index["objective"] == "flow"
    assert _weights(run / "pipeline" / "transformer").keys() == _weights(run / "model_ema").keys()
    for loaded in (AxialDiTPipeline.from_pretrained(run / "pipeline"), load_run_pipeline(run)):
        assert loaded.config.class_names == ["apple", "zebra"] and _same(
            loaded.transformer, _weights(run / "model_ema")
        )
    # the same without weights, from the start: what makes every checkpoint a pipeline
    assert not list((run / "pipeline-config").rglob("*.safetensors"))
    assert json.loads((run / "pipeline-config" / "model_index.json").read_text())["class_names"] == ["apple", "zebra"]


def test_a_run_is_loaded_by_its_own_function_and_from_pretrained_names_it(run):
    for part in (run, run / "checkpoints" / "checkpoint-000002", run / "model"):
        with pytest.raises(ValueError, match="no model_index.json.*axialrope.pipelines.load_run_pipeline"):
            AxialDiTPipeline.from_pretrained(part)
    with pytest.raises(ValueError, match="no part of a training run"):
        load_run_pipeline(run / "pipeline" / "transformer")


def test_a_checkpoint_and_the_model_folders_load_as_pipelines(run):
    checkpoint = run / "checkpoints" / "checkpoint-000002"  # the last step: its EMA is model_ema's
    from_checkpoint = load_run_pipeline(checkpoint)
    assert from_checkpoint.config.class_names == ["apple", "zebra"]
    assert _same(from_checkpoint.transformer, _weights(run / "model_ema"))
    assert not _same(from_checkpoint.transformer, _weights(run / "model"))  # EMA, not the raw weights
    assert _same(load_run_pipeline(run / "model").transformer, _weights(run / "model"))
    assert load_run_pipeline(checkpoint, dtype=torch.bfloat16).transformer.dtype == torch.bfloat16
    # --init-from reads the same weights
    assert _same(load_dit(run), _weights(run / "model_ema")) and _same(
        load_dit(checkpoint), _weights(run / "model_ema")
    )


def test_a_run_without_ema_uses_its_raw_weights(tmp_path):
    config = TrainConfig.from_dict(
        {**TINY, "ema_decay": 0.0, "max_steps": 1, "checkpointing_steps": 1, "output_dir": str(tmp_path / "run")}
    )
    train_loop.train(config)
    run = tmp_path / "run"
    assert not (run / "model_ema").exists()
    assert _same(load_run_pipeline(run).transformer, _weights(run / "model"))
    assert _same(load_run_pipeline(run / "checkpoints" / "checkpoint-000001").transformer, _weights(run / "model"))
    # procedural shapes: the shapes' names
    assert load_run_pipeline(run).config.class_names[:2] == ["circle", "triangle"]


def test_sample_takes_a_run_and_a_checkpoint(run, tmp_path, capsys):
    for model, out in ((run, tmp_path / "run.png"), (run / "checkpoints" / "checkpoint-000002", tmp_path / "ckpt.png")):
        assert (
            main(
                [
                    "sample",
                    "--model",
                    str(model),
                    "--classes",
                    "zebra",
                    "--num",
                    "2",
                    "--steps",
                    "1",
                    "--scheduler",
                    "unipc",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        assert Image.open(out).size == (2 * 8 + 3 * 2, 8 + 2 * 2)
        assert "(2 images of 8x8; extrapolation auto: none, 1 step of unipc)" in capsys.readouterr().out


def test_init_from_takes_a_checkpoint(run, tmp_path):
    """(A run folder goes through the same load_dit, checked above.)"""
    ema = _weights(run / "model_ema")
    config = TrainConfig.from_dict(
        {
            **TINY,
            "data": "image_folder",
            "data_dir": str(run.parent / "data"),
            "init_from": str(run / "checkpoints" / "checkpoint-000002"),
            "max_steps": 1,
            "learning_rate": 1e-12,
            "ema_decay": 0.0,
            "output_dir": str(tmp_path / "run"),
        }
    )
    model = train_loop.train(config).model  # one step too small to move the weights
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor, ema[name], atol=1e-6, rtol=0, msg=name)


def test_an_unfinished_run_samples_its_newest_checkpoint(run, tmp_path):
    unfinished = tmp_path / "unfinished"
    shutil.copytree(run, unfinished, ignore=shutil.ignore_patterns("pipeline", "model", "model_ema"))
    assert _same(load_run_pipeline(unfinished).transformer, _weights(run / "model_ema"))
    shutil.rmtree(unfinished / "checkpoints")
    with pytest.raises(ValueError, match="training run with no weights yet"):
        load_run_pipeline(unfinished)


def test_a_run_from_before_pipelines_were_written_gets_a_clear_error(run, tmp_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(run, old, ignore=shutil.ignore_patterns("pipeline", "pipeline-config"))
    for model in (old, old / "checkpoints" / "checkpoint-000002"):
        assert main(["sample", "--model", str(model), "--steps", "1", "--out", str(tmp_path / "x.png")]) == 2
        assert "written before runs recorded their pipeline" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
