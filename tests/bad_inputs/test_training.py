"""Bad inputs of training: configs and config files, checkpoints and state files, the text LM's
checkpoints, and `axialrope train`."""

import json
import math
import os
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from axialrope.pipelines.cli.interrupts import Terminated
from axialrope.pipelines.dit.runs import load_run_pipeline
from axialrope.pipelines.training import loop
from axialrope.pipelines.training.checkpoints import DamagedCheckpointError, find_resumable, read_checkpoint
from axialrope.pipelines.training.config import TrainConfig, read_config_file
from axialrope.pipelines.training.run_folder import LOCK_FILE
from axialrope.pipelines.training.text_lm import load_checkpoint
from axialrope.pipelines.training.train_state import StateFileError, read_state, write_state

from .conftest import BEYOND_A_FLOAT, NOT_UTF8, photo_folder


class Payload:
    def __reduce__(self):
        return (print, ("the payload ran",))


def train_config(tmp: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({"resolution": ["16"], "output_dir": str(tmp / "run"), **overrides})


def lm_file(tmp: Path) -> Path:
    from axialrope.models import TextLMConfig, TinyCausalLM
    from axialrope.pipelines.training.text_lm import save_checkpoint

    save_checkpoint(
        TinyCausalLM(TextLMConfig(vocab_size=8, dim=16, depth=1, num_heads=2, num_kv_heads=1)), tmp / "lm.safetensors"
    )
    return tmp / "lm.safetensors"


def old_checkpoint(tmp: Path) -> Path:
    """A checkpoint folder as accelerate's save_state wrote it: pickle files beside the weights."""
    folder = tmp / "checkpoints" / "checkpoint-000002"
    folder.mkdir(parents=True)
    for name in ("optimizer.bin", "scheduler.bin", "random_states_0.pkl", "custom_checkpoint_0.pkl"):
        (folder / name).write_bytes(pickle.dumps(Payload()))
    return folder


def read_only_folder(tmp: Path) -> Path:
    """A folder no file can be made in: made read-only (chmod), or for root (who writes anywhere) /sys."""
    import tempfile

    if os.geteuid() != 0:
        (tmp / "read-only").mkdir()
        (tmp / "read-only").chmod(0o555)
        return tmp / "read-only"
    try:
        os.close(tempfile.mkstemp(dir="/sys")[0])
    except OSError:
        return Path("/sys")
    pytest.skip("no read-only folder here")


def run_with_read_only_checkpoints(tmp: Path) -> Path:
    (tmp / "run").mkdir()
    (tmp / "run" / "checkpoints").symlink_to(read_only_folder(tmp), target_is_directory=True)
    return tmp / "run"


def edit_trainer_state(run: Path, step: int, **changes) -> Path:
    """The run's checkpoint of `step`, its trainer_state.json edited by hand (its digest left as it was)."""
    folder = run / "checkpoints" / f"checkpoint-{step:06d}"
    state = json.loads((folder / "trainer_state.json").read_text())
    (folder / "trainer_state.json").write_text(json.dumps({**state, **changes}))
    return folder


def cut_last_line(path: Path) -> Path:
    """The file's last line cut short, as a crash mid-write leaves it."""
    path.write_bytes(path.read_bytes()[:-10])
    return path


def link_out(run: Path, step: int, outside: Path) -> Path:
    """The run's checkpoint of `step` moved to `outside`, a link to it in its place; returns `outside`."""
    folder = run / "checkpoints" / f"checkpoint-{step:06d}"
    shutil.move(folder, outside)
    folder.symlink_to(outside, target_is_directory=True)
    return outside


def killed_before_the_pipeline(run: Path) -> Path:
    """The run as a kill between its final saves leaves it: model/ and model_ema/ of the last step published,
    pipeline/ not (a resume removes it first; a fresh run has none yet)."""
    shutil.rmtree(run / "pipeline")
    return run


def relative_data_dir(run: Path, data_dir: str) -> Path:
    """The run's config.yaml naming its data by a relative path."""
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "data_dir": data_dir}, sort_keys=False))
    return run


def copy_data(run: Path, target: Path) -> Path:
    """A copy of the folder the run trained on (its data.json names it): the same files, elsewhere."""
    return Path(shutil.copytree(json.loads((run / "data.json").read_text())["data_dir"], target))


CALIBRATED = [
    {"up_to_scale": 2.5, "method": "pi", "entropy_scaling": True, "measured": "detail SWD 1.0 (axialrope calibrate)"},
    {"up_to_scale": None, "method": "yarn", "entropy_scaling": False, "measured": "detail SWD 2.0"},
]


def calibrated(run: Path) -> Path:
    """The run as `axialrope calibrate` leaves it: CALIBRATED recorded in its pipeline/ and pipeline-config/."""
    from axialrope.pipelines.dit.default_extrapolation import write_default_extrapolations

    write_default_extrapolations([run / "pipeline", run / "pipeline-config"], CALIBRATED)
    return run


def same_weights(a, b) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    (
        "learning-rate-inf",
        lambda k: lambda: train_config(k.tmp, learning_rate=math.inf).validate(),
        ValueError,
        "learning_rate",
    ),
    (
        "learning-rate-nan",
        lambda k: lambda: train_config(k.tmp, learning_rate=math.nan).validate(),
        ValueError,
        "learning_rate",
    ),
    (
        "max-grad-norm-inf",
        lambda k: lambda: train_config(k.tmp, max_grad_norm=math.inf).validate(),
        ValueError,
        "max_grad_norm",
    ),
    (
        "weight-decay-inf",
        lambda k: lambda: train_config(k.tmp, weight_decay=math.inf).validate(),
        ValueError,
        "weight_decay",
    ),
    (
        "guidance-scale-1e30",
        lambda k: lambda: train_config(k.tmp, guidance_scale=1e30).validate(),
        ValueError,
        "guidance_scale",
    ),
    (
        "rope-theta-inf",
        lambda k: lambda: train_config(k.tmp, rope_theta=[math.inf]).validate(),
        ValueError,
        "rope_theta",
    ),
    (
        "dataset-size-1e11",
        lambda k: (k.limit_memory(64), lambda: train_config(k.tmp, dataset_size=10**11).validate())[-1],
        ValueError,
        "at most dataset_size",
    ),
    (
        "sample-steps-1e9",
        lambda k: (k.limit_memory(8), lambda: train_config(k.tmp, sample_steps=10**9).validate())[-1],
        ValueError,
        "at most sample_steps",
    ),
    (
        "overwrite-and-resume-at-once",
        lambda k: lambda: train_config(k.tmp, resume="latest", overwrite_output_dir=True).validate(),
        ValueError,
        "give one of them",
    ),
    (
        "overwrite-not-a-bool",
        lambda k: lambda: train_config(k.tmp, overwrite_output_dir="yes").validate(),
        ValueError,
        "overwrite_output_dir",
    ),
    (
        "checkpoints-read-only",
        lambda k: (
            f := run_with_read_only_checkpoints(k.tmp),
            lambda: train_config(k.tmp, output_dir=str(f)).validate(),
        )[-1],
        ValueError,
        "not writable",
    ),
    (
        "checkpoints-is-a-file",
        lambda k: (k.write("run/checkpoints", "x"), lambda: train_config(k.tmp).validate())[-1],
        ValueError,
        "is a file",
    ),
    # trackers and validation samples
    (
        "report-to-unknown",
        lambda k: lambda: train_config(k.tmp, report_to="comet").validate(),
        ValueError,
        "report_to must be one of",
    ),
    (
        "report-to-a-list",
        lambda k: lambda: train_config(k.tmp, report_to=["tensorboard"]).validate(),
        ValueError,
        "report_to",
    ),
    (
        "report-to-tensorboard-not-installed",
        lambda k: (k.hide_trackers(), lambda: train_config(k.tmp, report_to="tensorboard").validate())[-1],
        ValueError,
        "pip install tensorboard",
    ),
    (
        "report-to-wandb-not-installed",
        lambda k: (k.hide_trackers(), lambda: train_config(k.tmp, report_to="wandb").validate())[-1],
        ValueError,
        "pip install wandb",
    ),
    (
        "report-to-all-none-installed",
        lambda k: (k.hide_trackers(), lambda: train_config(k.tmp, report_to="all").validate())[-1],
        ValueError,
        "none of tensorboard, wandb",
    ),
    (
        "validation-steps-0",
        lambda k: lambda: train_config(k.tmp, validation_steps=0).validate(),
        ValueError,
        "validation_steps",
    ),
    (
        "validation-steps-negative",
        lambda k: lambda: train_config(k.tmp, validation_steps=-5).validate(),
        ValueError,
        "validation_steps",
    ),
    (
        "validation-steps-fractional",
        lambda k: lambda: train_config(k.tmp, validation_steps=2.5).validate(),
        ValueError,
        "validation_steps",
    ),
    (
        "validation-inference-steps-0",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_num_inference_steps=0).validate(),
        ValueError,
        "validation_num_inference_steps",
    ),
    (
        "validation-inference-steps-1e9",
        lambda k: (
            k.limit_memory(8),
            lambda: train_config(k.tmp, validation_steps=1, validation_num_inference_steps=10**9).validate(),
        )[-1],
        ValueError,
        "at most validation_num_inference_steps",
    ),
    (
        "validation-scale-1",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales=[1]).validate(),
        ValueError,
        "validation_scales",
    ),
    (
        "validation-scale-below-1",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales=[0.5]).validate(),
        ValueError,
        "validation_scales",
    ),
    (
        "validation-scale-inf",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales=[math.inf]).validate(),
        ValueError,
        "validation_scales",
    ),
    (
        "validation-scale-nan",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales=[math.nan]).validate(),
        ValueError,
        "validation_scales",
    ),
    (
        "validation-scales-repeated",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales=[2, 2.0]).validate(),
        ValueError,
        "distinct",
    ),
    (
        "validation-scales-not-a-list",
        lambda k: lambda: train_config(k.tmp, validation_steps=1, validation_scales="2").validate(),
        ValueError,
        "validation_scales",
    ),
    (
        "validation-scales-without-steps",
        lambda k: lambda: train_config(k.tmp, validation_scales=[2]).validate(),
        ValueError,
        "--validation-steps",
    ),
    # configs
    (
        "output-dir-is-a-file",
        lambda k: (k.write("file", "x"), lambda: train_config(k.tmp, output_dir=str(k.tmp / "file")).validate())[-1],
        ValueError,
        "output_dir",
    ),
    (
        "output-dir-under-a-file",
        lambda k: (
            k.write("file", "x"),
            lambda: train_config(k.tmp, output_dir=str(k.tmp / "file" / "run")).validate(),
        )[-1],
        ValueError,
        "output_dir",
    ),
    (
        "init-from-truncated",
        lambda k: (
            f := k.model_folder(),
            k.truncate(k.weights_file(f)),
            lambda: train_config(k.tmp, init_from=str(f)).validate(),
        )[-1],
        ValueError,
        "truncated",
    ),
    (
        "init-from-depth-disagrees",
        lambda k: (
            f := k.model_folder(),
            k.edit_json(f / "config.json", depth=3),
            lambda: train_config(k.tmp, init_from=str(f)).validate(),
        )[-1],
        ValueError,
        "depth",
    ),
    (
        "resume-not-a-folder",
        lambda k: lambda: train_config(k.tmp, resume=str(k.tmp / "nowhere")).validate(),
        ValueError,
        "resume",
    ),
    (
        "resume-badly-named-folder",
        lambda k: ((k.tmp / "ckpt").mkdir(), lambda: train_config(k.tmp, resume=str(k.tmp / "ckpt")).validate())[-1],
        ValueError,
        "checkpoint folder",
    ),
    # config files
    (
        "config-malformed-yaml",
        lambda k: (k.write("c.yaml", "a: [b\n  c"), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "YAML",
    ),
    (
        "config-malformed-json",
        lambda k: (k.write("c.json", "{'a': 1}"), lambda: read_config_file(k.tmp / "c.json"))[-1],
        ValueError,
        "JSON",
    ),
    (
        "config-a-list",
        lambda k: (k.write("c.yaml", "- 1\n- 2\n"), lambda: TrainConfig.from_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "mapping",
    ),
    (
        "config-yaml-alias-bomb",
        lambda k: (k.write("c.yaml", k.alias_bomb()), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "expands",
    ),
    (
        "config-yaml-alias-in-itself",
        lambda k: (k.write("c.yaml", "a: &a [*a]\n"), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "refers to a value that holds it",
    ),
    (
        "config-of-2-mib",
        lambda k: (k.write("c.yaml", "#" * (2 << 20)), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "bytes",
    ),
    (
        "config-json-nested-too-deeply",
        lambda k: (k.write("c.json", "[" * 100_000 + "]" * 100_000), lambda: read_config_file(k.tmp / "c.json"))[-1],
        ValueError,
        "nested too deeply",
    ),
    (
        "config-a-fifo",
        lambda k: (os.mkfifo(k.tmp / "c.yaml"), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "not a regular file",
    ),
    (
        "config-binary",
        lambda k: (k.write("c.yaml", b"\xff\xfe\x00"), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
        ValueError,
        "YAML",
    ),
    # checkpoints and state files
    (
        "lm-checkpoint-truncated",
        lambda k: (f := lm_file(k.tmp), k.truncate(f), lambda: load_checkpoint(f))[-1],
        ValueError,
        "truncated",
    ),
    (
        "lm-checkpoint-pickle",
        lambda k: (k.write("lm.pt", pickle.dumps(Payload())), lambda: load_checkpoint(k.tmp / "lm.pt"))[-1],
        ValueError,
        "safetensors",
    ),
    (
        "lm-checkpoint-missing",
        lambda k: lambda: load_checkpoint(k.tmp / "none.safetensors"),
        FileNotFoundError,
        "does not exist",
    ),
    (
        "state-file-pickle",
        lambda k: (k.write("s.safetensors", pickle.dumps(Payload())), lambda: read_state(k.tmp / "s.safetensors"))[-1],
        StateFileError,
        "corrupt",
    ),
    (
        "state-file-unknown-tag",
        lambda k: (k.write("s.json", '{"__class__": "os.system"}'), lambda: read_state(k.tmp / "s.json"))[-1],
        StateFileError,
        "unknown tag",
    ),
    ("state-of-an-object", lambda k: lambda: write_state(k.tmp / "s.json", {"x": object()}), TypeError, "pickle"),
    (
        "accelerate-checkpoint",
        lambda k: (f := old_checkpoint(k.tmp), lambda: read_checkpoint(f))[-1],
        DamagedCheckpointError,
        "trainer_state.json",
    ),
    (
        "resume-only-damaged",
        lambda k: (
            old_checkpoint(k.tmp),
            lambda: find_resumable("latest", k.tmp / "checkpoints", report=lambda line: None),
        )[-1],
        DamagedCheckpointError,
        "no usable checkpoint",
    ),
    (
        "trainer-state-counters-edited",
        lambda k: (f := edit_trainer_state(k.run(), 2, micro_batches=0), lambda: read_checkpoint(f))[-1],
        DamagedCheckpointError,
        "digest",
    ),
    (
        "trainer-state-of-version-1",
        lambda k: (f := edit_trainer_state(k.run(), 2, version=1), lambda: read_checkpoint(f))[-1],
        DamagedCheckpointError,
        "version 1",
    ),
    (
        "resume-missing-folder",
        lambda k: lambda: find_resumable(str(k.tmp / "checkpoint-000002"), k.tmp),
        FileNotFoundError,
        "does not exist",
    ),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)


# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(
        lambda k: (k.write("f", "x"), ["train", "--output-dir", str(k.tmp / "f")])[-1],
        "output_dir",
        id="train-output-dir-a-file",
    ),
    pytest.param(
        lambda k: (k.write("c.yaml", "max_steps: [1\n"), ["train", "--config", str(k.tmp / "c.yaml")])[-1],
        "YAML",
        id="train-malformed-yaml",
    ),
    pytest.param(
        lambda k: (k.write("c.yaml", "- max_steps\n"), ["train", "--config", str(k.tmp / "c.yaml")])[-1],
        "mapping",
        id="train-config-not-a-mapping",
    ),
    pytest.param(
        lambda k: (f := k.model_folder(), k.truncate(k.weights_file(f)), ["train", "--init-from", str(f)])[-1],
        "truncated",
        id="train-truncated-init-from",
    ),
    pytest.param(
        lambda k: ["train", "--resume", str(k.tmp / "checkpoint-000004")], "resume", id="train-resume-missing"
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            config := f / "pipeline-config" / "transformer" / "config.json",
            k.edit_json(config, depth=10**8),
            ["train", "--output-dir", str(k.tmp / "new"), "--init-from", str(f / "checkpoints" / "checkpoint-000002")],
        )[-1],
        "depth 100000000",
        id="train-init-from-a-checkpoint-whose-config-says-depth-1e8",
    ),
    pytest.param(lambda k: ["train", "--rope-theta", "0.5"], "rope_theta", id="train-theta-below-1"),
    pytest.param(lambda k: ["train", "--resolution", BEYOND_A_FLOAT], "resolution", id="train-resolution-4e400"),
    pytest.param(lambda k: ["train", "--max-steps", BEYOND_A_FLOAT], "max_steps", id="train-max-steps-4e400"),
    pytest.param(
        lambda k: ["train", "--validation-steps", "1", "--validation-scales", "1e300"],
        "validation_scales",
        id="train-validation-scale-1e300",
    ),
    pytest.param(
        lambda k: ["train", "--validation-steps", "1", "--validation-scales", "1.01"],
        "the trained size",
        id="train-validation-scale-rounding-to-the-trained-size",
    ),
    pytest.param(
        lambda k: ["train", "--validation-steps", "1", "--validation-scales", "1.5", "1.51"],
        "both round to 48x48",
        id="train-validation-scales-rounding-to-one-size",
    ),
    pytest.param(
        lambda k: ["train", "--output-dir", NOT_UTF8, "--report-to", "tensorboard"],
        "not valid UTF-8",
        id="train-output-dir-not-utf8-with-tensorboard",
    ),
    pytest.param(
        lambda k: (k.hide_package("skimage"), ["train", "--data", "photographs"])[-1],
        "pip install axialrope[photos]",
        id="train-photographs-without-scikit-image",
    ),
    pytest.param(lambda k: ["train", "--learning-rate", "inf"], "learning_rate", id="train-learning-rate-inf"),
    pytest.param(lambda k: ["train", "--guidance-scale", "1e30"], "guidance_scale", id="train-guidance-1e30"),
    pytest.param(
        lambda k: (k.limit_memory(64), ["train", "--dataset-size", "100000000000"])[-1],
        "at most dataset_size",
        id="train-dataset-size-1e11",
    ),
    pytest.param(
        lambda k: (k.write("c.yaml", k.alias_bomb()), ["train", "--config", str(k.tmp / "c.yaml")])[-1],
        "expands",
        id="train-yaml-alias-bomb",
    ),
    pytest.param(
        lambda k: (k.limit_memory(1), ["train", "--batch-size", "100000", "--resolution", "64"])[-1],
        "at most --batch-size",
        id="train-batch-larger-than-memory",
    ),
    pytest.param(
        lambda k: (k.limit_memory(1), ["train", "--samples-per-class", "1000000"])[-1],
        "samples_per_class",
        id="train-final-grid-larger-than-memory",
    ),
    pytest.param(lambda k: (k.limit_disk(0.01), ["train"])[-1], "MiB free", id="train-on-a-full-disk"),
    pytest.param(lambda k: ["train", "--report-to", "comet"], "report_to", id="train-report-to-unknown"),
    pytest.param(
        lambda k: (k.hide_trackers(), ["train", "--report-to", "wandb"])[-1],
        "pip install wandb",
        id="train-report-to-a-tracker-not-installed",
    ),
    pytest.param(lambda k: ["train", "--validation-steps", "0"], "validation_steps", id="train-validation-steps-0"),
    pytest.param(
        lambda k: ["train", "--validation-scales", "2"],
        "--validation-steps",
        id="train-validation-scales-without-steps",
    ),
    pytest.param(
        lambda k: ["train", "--validation-steps", "1", "--validation-scales", "0.5"],
        "validation_scales",
        id="train-validation-scale-below-1",
    ),
    pytest.param(
        lambda k: (k.limit_memory(1), ["train", "--validation-steps", "1", "--validation-scales", "1000"])[-1],
        "validation_scales",
        id="train-validation-larger-than-memory",
    ),
    pytest.param(
        lambda k: ["train", "--output-dir", str(run_with_read_only_checkpoints(k.tmp))],
        "not writable",
        id="train-read-only-checkpoints",
    ),
    # a folder holding a run: never lost, never mixed
    pytest.param(lambda k: k.run_argv(k.run()), "--resume latest", id="train-fresh-start-in-a-used-folder"),
    pytest.param(lambda k: k.run_argv(k.run()), "--overwrite-output-dir", id="train-fresh-start-names-the-way-over"),
    pytest.param(
        lambda k: (f := k.run(), k.lock(f), k.run_argv(f, "--resume", "latest", "--max-steps", "3"))[-1],
        "in use by another training run",
        id="train-second-run-on-a-locked-folder",
    ),
    pytest.param(
        lambda k: k.run_argv(k.run(), "--resume", "latest", "--learning-rate", "0.1"),
        "--learning-rate",
        id="train-resume-with-another-learning-rate",
    ),
    pytest.param(
        lambda k: k.run_argv(k.run(), "--resume", "latest", "--batch-size", "2"),
        "--batch-size",
        id="train-resume-with-another-batch-size",
    ),
    pytest.param(
        lambda k: k.run_argv(k.run(), "--resume", "latest", "--seed", "7"),
        "--seed",
        id="train-resume-with-another-seed",
    ),
    pytest.param(
        lambda k: (f := k.run(), shutil.rmtree(f / "checkpoints"), k.run_argv(f, "--resume", "latest"))[-1],
        "no checkpoint to continue it from",
        id="train-resume-a-finished-run-without-checkpoints",
    ),
    pytest.param(
        lambda k: (f := k.run(), k.run_argv(f, "--resume", str(f / "checkpoints" / "checkpoint-000001")))[-1],
        "newest checkpoint is checkpoint-000002",
        id="train-resume-an-older-checkpoint",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            g := k.run("other"),
            k.run_argv(f, "--resume", str(g / "checkpoints" / "checkpoint-000002")),
        )[-1],
        "belongs to another run",
        id="train-resume-another-runs-checkpoint-into-a-used-folder",
    ),
    pytest.param(
        lambda k: (f := k.run(), k.run_argv(f, "--resume", str(edit_trainer_state(f, 2, micro_batches=0))))[-1],
        "digest",
        id="train-resume-hand-edited-counters",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            k.run_argv(f, "--overwrite-output-dir", "--data", "image_folder", "--data-dir", str(k.tmp / "missing")),
        )[-1],
        "does not exist",
        id="train-overwrite-with-bad-data-deletes-nothing",
    ),
    pytest.param(
        lambda k: (f := k.run(), k.run_argv(f, "--overwrite-output-dir", "--dataset-size", "2"))[-1],
        "lower batch_size",
        id="train-overwrite-with-too-little-data-deletes-nothing",
    ),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)


# (id, make(kit) -> the call, holds(its result))
HANDLED = [
    (
        "killed-between-the-final-saves",
        lambda k: (
            f := killed_before_the_pipeline(k.run()),
            lambda: (
                load_run_pipeline(f).transformer.state_dict(),
                load_run_pipeline(f / "model_ema").transformer.state_dict(),
            ),
        )[-1],
        lambda served: same_weights(*served),
    ),  # the folder serves the newest checkpoint: the last step's weights
]


@pytest.mark.parametrize("make, holds", [pytest.param(*case[1:], id=case[0]) for case in HANDLED])
def test_an_input_that_must_be_taken_is_taken_right_and_writes_nothing(expect_handled, make, holds):
    expect_handled(make, holds)


# what a resume to step 3 of a run (RUN) rewrites or adds; everything else stays as it was
RESUMED = tuple(
    f"run/{name}"
    for name in (
        "loss.jsonl",
        "loss.png",
        "samples.png",
        "config.yaml",
        "model",
        "model_ema",
        "pipeline",
        "pipeline-config",
        "checkpoints/checkpoint-000003",
    )
)
TO_STEP_3 = ("--resume", "latest", "--max-steps", "3")

# pytest.param(make(kit) -> argv, exit code, a word of the output, the paths that may change, id=...)
RUN_CASES = [
    pytest.param(
        lambda k: (f := k.run(), (f / "loss.jsonl").unlink(), k.run_argv(f, *TO_STEP_3))[-1],
        0,
        "loss.jsonl is missing",
        RESUMED,
        id="train-resume-after-the-loss-log-was-deleted",
    ),
    pytest.param(
        lambda k: (f := k.run(), cut_last_line(f / "loss.jsonl"), k.run_argv(f, *TO_STEP_3))[-1],
        0,
        "cut short by a crash",
        RESUMED,
        id="train-resume-after-the-loss-log-was-cut-short",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            (f / LOCK_FILE).write_text("process 999999 on elsewhere, started 2026"),
            k.run_argv(f, *TO_STEP_3),
        )[-1],
        0,
        "took over the lock left by a run that no longer runs",
        (*RESUMED, f"run/{LOCK_FILE}"),
        id="train-resume-over-the-stale-lock-of-a-killed-run",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            link_out(f, 1, k.tmp / "elsewhere"),
            k.run_argv(f, *TO_STEP_3, "--checkpoints-total-limit", "1"),
        )[-1],
        0,
        "checkpoints_total_limit",
        (*RESUMED, "run/checkpoints"),  # tmp/elsewhere, the link's target, stays
        id="train-pruning-a-linked-checkpoint-deletes-only-the-link",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            k.fail_write("checkpoint-000003.tmp", "optimizer.safetensors"),
            k.run_argv(f, *TO_STEP_3),
        )[-1],
        1,
        "the last complete checkpoint is checkpoint-000002",
        ("run/loss.jsonl", "run/config.yaml", "run/pipeline"),
        id="train-full-disk-at-a-checkpoint",
    ),
    pytest.param(
        lambda k: (
            (k.tmp / "run").mkdir(),
            k.run_argv(k.tmp / "run", "--learning-rate", "1e30", "--lr-warmup-steps", "0", "--sample-steps", "2"),
        )[-1],
        1,
        "learning_rate",
        ("run/loss.jsonl", "run/config.yaml", "run/checkpoints", "run/pipeline-config"),
        id="train-weights-that-diverge-write-no-final-model",
    ),
    # Ctrl-C and SIGTERM: one line naming the last good checkpoint, nothing half-written left
    pytest.param(
        lambda k: (
            f := k.run(),
            k.interrupt(loop, "training_loss", calls=1),
            k.run_argv(f, "--resume", "latest", "--max-steps", "4"),
        )[-1],
        130,
        "stopped by Ctrl-C; the last good checkpoint is",
        RESUMED,  # checkpoint-000003 is saved, then Ctrl-C during step 4
        id="train-ctrl-c-mid-run",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            k.interrupt(loop, "training_loss", Terminated, calls=1),
            k.run_argv(f, "--resume", "latest", "--max-steps", "4"),
        )[-1],
        143,
        "checkpoint-000003",
        RESUMED,
        id="train-sigterm-mid-run",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            k.fail_write("checkpoint-000003.tmp", "optimizer.safetensors", stop=KeyboardInterrupt),
            k.run_argv(f, *TO_STEP_3),
        )[-1],
        130,
        "the last good checkpoint is",  # checkpoint-000002: the half-written checkpoint-000003.tmp is gone
        ("run/loss.jsonl", "run/config.yaml", "run/pipeline", "run/pipeline-config"),
        id="train-ctrl-c-while-saving-a-checkpoint",
    ),
    pytest.param(
        lambda k: (
            f := k.run(),
            k.interrupt(loop, "save_sample_grid"),  # model/ and model_ema/ are staged, not yet published
            k.run_argv(f, *TO_STEP_3),
        )[-1],
        130,
        "checkpoint-000003",
        RESUMED,
        id="train-ctrl-c-while-writing-the-final-models",
    ),
    # the run's data: where it is, and what it read
    pytest.param(
        lambda k: (
            f := k.folder_run(),
            photo_folder(k.tmp / "photos", seed=1),
            k.folder_run_argv(f, *TO_STEP_3, "--data-dir", "photos"),
        )[-1],
        2,
        "holds other files",
        (),
        id="train-resume-on-other-data",
    ),
    pytest.param(
        lambda k: (
            f := k.folder_run(),
            relative_data_dir(f, "photos"),  # as a run recorded it before data_dir was made absolute
            photo_folder(k.tmp / "photos", seed=1),  # the same name in the folder the resume starts from
            k.folder_run_argv(f, *TO_STEP_3),
        )[-1],
        2,
        "the run trained on",
        (),
        id="train-resume-from-another-folder-with-a-relative-data-dir",
    ),
    pytest.param(
        lambda k: (
            f := k.folder_run(),
            copy_data(f, k.tmp / "moved"),
            k.folder_run_argv(f, *TO_STEP_3, "--data-dir", "moved"),
        )[-1],
        0,
        "the run's data moved",
        (*RESUMED, "run/data.json"),
        id="train-resume-on-the-same-data-moved",
    ),
    pytest.param(
        lambda k: (f := k.run(), calibrated(f), k.run_argv(f, *TO_STEP_3))[-1],
        0,
        "keeps the run's default_extrapolation",
        RESUMED,
        id="train-resume-keeps-the-calibrated-default",
    ),
]


@pytest.mark.parametrize("make, code, word, may_change", RUN_CASES)
def test_a_run_on_a_hostile_folder_loses_nothing(expect_run_outcome, make, code, word, may_change):
    expect_run_outcome(make, code, word, may_change)


def test_a_resumed_run_keeps_its_calibration(expect_run_outcome, kit):
    """The resume's pipeline-config/ and final pipeline/ record the calibrated bands, not the fallback's."""
    expect_run_outcome(lambda k: k.run_argv(calibrated(k.run()), *TO_STEP_3), 0, "default_extrapolation", RESUMED)
    for folder in ("pipeline", "pipeline-config"):
        recorded = json.loads((kit.tmp / "run" / folder / "model_index.json").read_text())["default_extrapolation"]
        assert recorded == CALIBRATED, folder


# the hostile sizes, each in a process of its own under `ulimit -v 8000000`: pytest.param(make(kit) -> argv, word)
HOSTILE_SIZES = [
    pytest.param(lambda k: ["train", "--dataset-size", "100000000000"], "at most dataset_size", id="dataset-size-1e11"),
    pytest.param(
        lambda k: (k.write("c.yaml", k.alias_bomb()), ["train", "--config", "c.yaml"])[-1],
        "expands",
        id="yaml-alias-bomb",
    ),
    pytest.param(
        lambda k: ["train", "--batch-size", "100000", "--resolution", "256"],
        "at most --batch-size",
        id="batch-size-100000",
    ),
    pytest.param(
        lambda k: ["train", "--samples-per-class", "1000000", "--resolution", "64"],
        "samples_per_class",
        id="final-grid-of-a-million",
    ),
    pytest.param(lambda k: ["train", "--sample-steps", "1000000000"], "at most sample_steps", id="sample-steps-1e9"),
]


@pytest.mark.slow
@pytest.mark.parametrize("make, word", HOSTILE_SIZES)
def test_a_hostile_size_is_refused_before_work_under_ulimit(expect_refused_under_ulimit, make, word):
    expect_refused_under_ulimit(make, word)
