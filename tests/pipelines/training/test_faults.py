"""Faults: a run killed with SIGKILL mid-step or mid-checkpoint, a damaged latest checkpoint and planted
pickle payloads; each resume ends bit-identical to an uninterrupted run, or is refused, and no payload runs."""

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from axialrope.pipelines.training import checkpoints, loop
from axialrope.pipelines.training.checkpoints import DamagedCheckpointError, find_resumable, read_checkpoint
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.outputs import read_loss_log
from axialrope.pipelines.training.train_state import read_state, write_state

COMMON = dict(  # a handful of steps of the tiny model at 16x16, crossing micro-batch boundaries
    resolution=["16"],
    batch_size=4,
    max_steps=6,
    gradient_accumulation_steps=2,
    checkpointing_steps=2,
    checkpoints_total_limit=None,
    log_every=1,
    lr_warmup_steps=1,
    sample_steps=2,
    samples_per_class=1,
    dataset_size=64,
)

KILL = """
import json, os, signal, sys
from axialrope.pipelines.training import loop, train_state
from axialrope.pipelines.training.config import TrainConfig

config, mode, at = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])

def die():
    os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: as hard as a crash gets

if mode == "mid-run":  # micro-batch `at` has run its forward pass, its step is not applied
    real_loss, calls = loop.training_loss, []
    def training_loss(*args, **kwargs):
        calls.append(1)
        loss = real_loss(*args, **kwargs)
        if len(calls) == at:
            die()
        return loss
    loop.training_loss = training_loss
elif mode == "mid-checkpoint":  # the checkpoint of step `at` has written two of its files
    real_write, written = train_state.write_state, []
    def write_state(path, value):
        result = real_write(path, value)
        if path.parent.name == f"checkpoint-{at:06d}.tmp":
            written.append(path)
            if len(written) == 2:
                die()
        return result
    train_state.write_state = write_state
loop.train(TrainConfig.from_dict(config))
"""


def weights(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / "diffusion_pytorch_model.safetensors")


def assert_same_run(a: Path, b: Path) -> None:
    """Final weights (raw and EMA) bit-identical, the same loss log."""
    for folder in ("model", "model_ema"):
        x, y = weights(a / folder), weights(b / folder)
        assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x), folder
    strip = lambda records: [(r["step"], r["loss"], r["lr"]) for r in records]  # noqa: E731
    assert strip(read_loss_log(a / "loss.jsonl")) == strip(read_loss_log(b / "loss.jsonl"))


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """An uninterrupted run (checkpoints at steps 2, 4, 6), the reference of every test here."""
    out = tmp_path_factory.mktemp("straight") / "run"
    loop.train(TrainConfig.from_dict(dict(COMMON, output_dir=str(out))))
    return out


def copy_run(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


@pytest.mark.slow
@pytest.mark.parametrize("mode, at, resumes_from", [("mid-run", 10, 4), ("mid-checkpoint", 4, 2)])
def test_a_run_killed_mid_step_or_mid_checkpoint_resumes_to_the_same_weights(
    tmp_path, straight, mode, at, resumes_from, capsys
):
    killed = dict(COMMON, output_dir=str(tmp_path / "killed"))
    script = tmp_path / "kill.py"
    script.write_text(KILL)
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    process = subprocess.run(
        [sys.executable, str(script), json.dumps(killed), mode, str(at)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == -9, process.stderr[-2000:]
    left = sorted(p.name for p in (tmp_path / "killed" / "checkpoints").iterdir())
    complete = [f"checkpoint-{s:06d}" for s in range(2, resumes_from + 1, 2)]
    assert [n for n in left if not n.endswith(".tmp")] == complete  # a half-written one never takes a final name
    assert ("checkpoint-000004.tmp" in left) == (mode == "mid-checkpoint")

    result = loop.train(TrainConfig.from_dict(dict(killed, resume="latest")))
    resumed_from = tmp_path / "killed" / "checkpoints" / complete[-1]
    assert f"resuming from {resumed_from} at step {resumes_from}" in capsys.readouterr().out
    assert (result.steps, result.start_step, result.invocation_steps) == (6, resumes_from, 6 - resumes_from)
    assert_same_run(tmp_path / "killed", straight)
    assert not list((tmp_path / "killed" / "checkpoints").glob("*.tmp"))  # the stale one was cleared


def damage(target: Path, how: str) -> None:
    data = target.read_bytes()
    if how == "missing":
        target.unlink()
    elif how == "bit-flip":
        target.write_bytes(data[:-5] + bytes([data[-5] ^ 1]) + data[-4:])  # same size, one bit of a weight
    else:
        target.write_bytes(data[: len(data) // 2])


def test_a_truncated_latest_checkpoint_falls_back_to_the_previous_one_and_says_so(tmp_path, straight, capsys):
    run = copy_run(straight, tmp_path / "run")
    damage(run / "checkpoints" / "checkpoint-000006" / "model.safetensors", "truncated")
    for folder in ("model", "model_ema"):
        shutil.rmtree(run / folder)
    result = loop.train(TrainConfig.from_dict(dict(COMMON, output_dir=str(run), resume="latest")))
    out = capsys.readouterr().out
    assert "skipping damaged checkpoint checkpoint-000006: model.safetensors has" in out
    assert "falling back to checkpoint-000004" in out
    assert result.start_step == 4
    assert_same_run(run, straight)


@pytest.mark.parametrize(
    "file, how, reason",
    [
        ("model.safetensors", "bit-flip", "does not match its sha256"),
        ("optimizer.safetensors", "missing", "is missing"),
        ("random_states_0.safetensors", "truncated", "bytes, 19992 were written"),
        ("trainer_state.json", "truncated", "trainer_state.json is truncated or corrupt"),
    ],
)
def test_any_damaged_file_makes_resume_fall_back(tmp_path, straight, file, how, reason):
    run = copy_run(straight, tmp_path / "run")
    damage(run / "checkpoints" / "checkpoint-000006" / file, how)
    lines = []
    assert find_resumable("latest", run / "checkpoints", report=lines.append).step == 4
    assert f"checkpoint-000006: {file}" in lines[0] and reason in lines[0]
    assert lines[1] == "resume: falling back to checkpoint-000004, the newest good checkpoint"


def test_a_corrupt_rng_state_is_an_error_not_a_silent_fresh_start(tmp_path, straight):
    run = copy_run(straight, tmp_path / "run")
    folder = run / "checkpoints" / "checkpoint-000006"
    states = read_state(folder / "random_states_0.safetensors")
    states["torch"] = states["torch"][:100]  # a generator state of the wrong length, in a well-formed file
    write_state(folder / "random_states_0.safetensors", states)
    with pytest.raises(DamagedCheckpointError, match="random_states_0.safetensors has 15028 bytes, 19992 were written"):
        read_checkpoint(folder)
    # even with the digests rewritten to match (a crafted checkpoint), the state itself is refused
    trainer = json.loads((folder / "trainer_state.json").read_text())
    trainer["files"]["random_states_0.safetensors"] = checkpoints._describe(folder / "random_states_0.safetensors")
    trainer["state_sha256"] = checkpoints._state_digest(trainer)
    (folder / "trainer_state.json").write_text(json.dumps(trainer))
    with pytest.raises(DamagedCheckpointError, match="random states are corrupt"):
        loop.train(TrainConfig.from_dict(dict(COMMON, output_dir=str(run), resume=str(folder))))


class Payload:
    """Unpickling this writes a marker file: proof that a file was unpickled."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "the payload ran"))


PLANTED = [
    "custom_checkpoint_0.pkl",
    "random_states_0.pkl",
    "optimizer.bin",
    "scheduler.bin",
    "model.pt",
    "pytorch_model.bin",
]


def test_planted_pickle_payloads_never_run_whatever_resume_does(tmp_path, straight, monkeypatch, capsys):
    marker = tmp_path / "PWNED"
    payload = pickle.dumps(Payload(marker))
    run = copy_run(straight, tmp_path / "run")
    latest = run / "checkpoints" / "checkpoint-000006"
    for folder in (run / "checkpoints").iterdir():
        for name in PLANTED:  # accelerate's and torch's pickle files, next to the real ones
            (folder / name).write_bytes(payload)

    def refuse(*args, **kwargs):
        raise AssertionError("resume unpickled something")

    # in turn, every file the checkpoint holds is replaced by the payload
    for name in sorted(p.name for p in latest.iterdir() if p.name not in PLANTED):
        original = (latest / name).read_bytes()
        (latest / name).write_bytes(payload)
        with monkeypatch.context() as patched:
            for module, function in ((torch, "load"), (pickle, "load"), (pickle, "loads")):
                patched.setattr(module, function, refuse)
            found = find_resumable("latest", run / "checkpoints", report=lambda line: None)
        assert found.step == 4, name  # the damaged latest is skipped; the previous one is used
        (latest / name).write_bytes(original)
        assert not marker.exists(), name

    # and a whole resume from the previous checkpoint, with the payloads beside it, ignores them, saying so
    (latest / "scheduler.json").write_bytes(payload)
    with monkeypatch.context() as patched:
        for module, function in ((torch, "load"), (pickle, "load"), (pickle, "loads")):
            patched.setattr(module, function, refuse)
        result = loop.train(TrainConfig.from_dict(dict(COMMON, output_dir=str(run), resume="latest")))
    assert not marker.exists()
    out = capsys.readouterr().out
    assert "skipping damaged checkpoint checkpoint-000006: scheduler.json" in out
    assert "ignoring files this project does not write (never opened): custom_checkpoint_0.pkl" in out
    assert result.start_step == 4
    assert_same_run(run, straight)


def test_pickle_beside_a_models_safetensors_is_never_loaded(tmp_path, monkeypatch):
    """--model and --init-from read safetensors only, whatever else the folder holds."""
    from axialrope.pipelines.dit.bundled import bundled_model_path, load_dit, load_pipeline

    marker = tmp_path / "PWNED"
    folder = Path(shutil.copytree(bundled_model_path("shapes-rope"), tmp_path / "pipe"))
    for name in ("diffusion_pytorch_model.bin", "pytorch_model.bin", "model.pt"):
        (folder / "transformer" / name).write_bytes(pickle.dumps(Payload(marker)))

    def refuse(*args, **kwargs):
        raise AssertionError("a model folder was unpickled")

    for module, function in ((torch, "load"), (pickle, "load"), (pickle, "loads")):
        monkeypatch.setattr(module, function, refuse)
    load_pipeline(str(folder), "cpu")
    load_dit(folder)
    TrainConfig.from_dict(dict(COMMON, init_from=str(folder), output_dir=str(tmp_path / "run"))).validate()
    assert not marker.exists()


def test_an_explicit_damaged_checkpoint_is_refused_with_exit_code_2(tmp_path, straight, capsys):
    from axialrope.pipelines.cli import main

    run = copy_run(straight, tmp_path / "run")
    folder = run / "checkpoints" / "checkpoint-000006"
    (folder / "optimizer.safetensors").write_bytes(b"\x00" * 10)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    code = main(["train", "--output-dir", str(run), "--resume", str(folder), *_flags(COMMON)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "optimizer.safetensors has 10 bytes" in err
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before  # nothing written


def test_checkpoints_are_fsynced_before_and_after_their_rename(tmp_path, monkeypatch):
    from axialrope.pipelines import paths

    events = []
    real_replace = os.replace
    monkeypatch.setattr(paths, "fsync_path", lambda path: events.append(("fsync", Path(path).name)))
    monkeypatch.setattr(paths.os, "replace", lambda a, b: (events.append(("rename", Path(b).name)), real_replace(a, b)))
    config = TrainConfig.from_dict(
        dict(
            COMMON, max_steps=1, checkpointing_steps=1, gradient_accumulation_steps=1, output_dir=str(tmp_path / "run")
        )
    )
    loop.train(config)
    rename = events.index(("rename", "checkpoint-000001"))
    synced_before = {name for kind, name in events[:rename] if kind == "fsync"}
    assert {
        "model.safetensors",
        "optimizer.safetensors",
        "ema.safetensors",
        "random_states_0.safetensors",
        "scheduler.json",
        "trainer_state.json",
        "checkpoint-000001.tmp",
    } <= synced_before
    assert ("fsync", "checkpoints") in events[rename + 1 :]  # the rename itself is made durable
    # the text LM's checkpoints go through the same helper
    from axialrope.models import TextLMConfig, TinyCausalLM
    from axialrope.pipelines.training.text_lm import save_checkpoint

    events.clear()
    save_checkpoint(
        TinyCausalLM(TextLMConfig(vocab_size=8, dim=16, depth=1, num_heads=2, num_kv_heads=1)),
        tmp_path / "lm" / "model.safetensors",
    )
    assert [e[0] for e in events] == ["fsync", "rename", "fsync"] and events[1] == ("rename", "model.safetensors")


def test_every_run_ends_on_a_checkpoint_and_a_resume_reports_its_own_steps_and_time(tmp_path, capsys):
    from axialrope.pipelines.cli import main

    run = tmp_path / "run"
    short = dict(COMMON, max_steps=3, checkpointing_steps=250, gradient_accumulation_steps=1)
    assert main(["train", "--output-dir", str(run), *_flags(short)]) == 0
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["checkpoint-000003"]  # shorter than the interval
    assert "trained 3 steps in" in capsys.readouterr().out
    first = read_loss_log(run / "loss.jsonl")

    # the log is appended to, never removed or rewritten in place
    real_unlink, real_write_text = Path.unlink, Path.write_text

    def guarded(real):
        def call(self, *args, **kwargs):
            assert self.name != "loss.jsonl", "loss.jsonl removed or rewritten in place"
            return real(self, *args, **kwargs)

        return call

    Path.unlink, Path.write_text = guarded(real_unlink), guarded(real_write_text)
    try:
        assert main(["train", "--output-dir", str(run), "--resume", "latest", *_flags(dict(short, max_steps=5))]) == 0
    finally:
        Path.unlink, Path.write_text = real_unlink, real_write_text
    out = capsys.readouterr().out
    assert "trained 2 steps (resumed at step 3) in" in out and "the run: 5 steps in" in out
    records = read_loss_log(run / "loss.jsonl")
    assert records[:3] == first and [r["step"] for r in records] == [1, 2, 3, 4, 5]
    seconds = [r["seconds"] for r in records]
    assert seconds == sorted(seconds) and seconds[3] >= seconds[2]  # the run's clock continues
    state = json.loads((run / "checkpoints" / "checkpoint-000005" / "trainer_state.json").read_text())
    assert state["seconds"] >= seconds[-1] - 0.0005  # the log rounds to milliseconds


def _flags(values: dict) -> list[str]:
    flags = []
    for key, value in values.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            flags += [flag, "none"]
        elif isinstance(value, list):
            flags += [flag, *map(str, value)]
        else:
            flags += [flag, str(value)]
    return flags
