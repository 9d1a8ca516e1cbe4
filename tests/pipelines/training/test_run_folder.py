"""A run's folder: one run at a time, never two mixed, nothing lost; what a resume keeps and changes; outputs a
reader never sees half-done; a stale lock, a damaged log. Hostile folders end to end (a full disk, a linked
checkpoint, diverged weights, ...) are in the catalogue, tests/bad_inputs/test_training.py."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from axialrope.pipelines.cli import main
from axialrope.pipelines.dit.runs import find_in_run
from axialrope.pipelines.training import loop
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.outputs import LossLog, read_loss_log
from axialrope.pipelines.training.run_folder import LOCK_FILE, RunFolderError, RunLock

RUN = dict(
    resolution=["16"],
    batch_size=4,
    max_steps=2,
    checkpointing_steps=1,
    checkpoints_total_limit=None,
    log_every=1,
    lr_warmup_steps=1,
    sample_steps=1,
    samples_per_class=1,
    dataset_size=64,
)


def flags(values: dict) -> list[str]:
    argv = []
    for key, value in values.items():
        argv += ["--" + key.replace("_", "-"), *(map(str, value) if isinstance(value, list) else [str(value)])]
    return [a if a != "None" else "none" for a in argv]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished run of two steps, checkpoints at 1 and 2."""
    folder = tmp_path_factory.mktemp("finished") / "run"
    loop.train(TrainConfig.from_dict({**RUN, "output_dir": str(folder)}))
    return folder


def copy(run: Path, to: Path) -> Path:
    return Path(shutil.copytree(run, to, symlinks=True))


def test_overwrite_output_dir_deletes_the_old_runs_files_and_nothing_else(finished, tmp_path, capsys):
    run = copy(finished, tmp_path / "run")
    (run / "notes.txt").write_text("mine")
    outside = Path(shutil.move(run / "checkpoints" / "checkpoint-000001", tmp_path / "kept"))
    (run / "checkpoints" / "checkpoint-000001").symlink_to(outside, target_is_directory=True)
    assert main(["train", "--output-dir", str(run), "--overwrite-output-dir", *flags(dict(RUN, max_steps=1))]) == 0
    assert "deleted the previous run's config.yaml, loss.jsonl" in capsys.readouterr().out
    assert (run / "notes.txt").read_text() == "mine"
    assert (outside / "model.safetensors").is_file()  # the link went, never what it pointed to
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["checkpoint-000001"]
    assert not (run / "checkpoints" / "checkpoint-000001").is_symlink()
    assert [r["step"] for r in read_loss_log(run / "loss.jsonl")] == [1]
    assert not (run / LOCK_FILE).exists()


def test_a_resume_continues_the_run_says_what_it_changes_and_config_yaml_describes_it(finished, tmp_path, capsys):
    run = copy(finished, tmp_path / "run")
    assert main(["train", "--output-dir", str(run), "--resume", "latest", "--max-steps", "3"]) == 0  # no other flag
    out = capsys.readouterr().out
    assert "resume: keeps the run's settings but max_steps 2 -> 3" in out
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    assert (recorded["max_steps"], recorded["batch_size"], recorded["resume"]) == (3, 4, None)  # the run's batch
    state = json.loads((run / "checkpoints" / "checkpoint-000003" / "trainer_state.json").read_text())
    assert state["config"]["max_steps"] == 3 and state["config"]["batch_size"] == 4
    assert main(["train", "--output-dir", str(run), "--resume", "latest", "--max-steps", "3"]) == 0
    assert "resume: the run's settings are unchanged" in capsys.readouterr().out


def test_a_held_lock_refuses_a_second_run_and_a_stale_one_is_taken_over(tmp_path, capsys):
    folder = tmp_path / "run"
    with RunLock(folder):
        with pytest.raises(RunFolderError, match=f"in use by another training run \\(process {os.getpid()} on "):
            RunLock(folder).__enter__()
    assert not (folder / LOCK_FILE).exists() and not folder.exists()  # released, and the empty folder it made gone
    folder.mkdir()
    (folder / LOCK_FILE).write_text("process 999999 on elsewhere, started 2000-01-01T00:00:00")  # no flock held
    lines = []
    with RunLock(folder, report=lines.append):
        pass
    assert lines == [
        "output_dir: took over the lock left by a run that no longer runs (process 999999 on "
        "elsewhere, started 2000-01-01T00:00:00)"
    ]


def test_the_lock_is_released_when_a_run_fails(tmp_path, monkeypatch):
    real_loss = loop.training_loss
    monkeypatch.setattr(loop, "training_loss", lambda *args, **kwargs: real_loss(*args, **kwargs) * float("nan"))
    with pytest.raises(loop.NonFiniteLossError):
        loop.train(TrainConfig.from_dict({**RUN, "output_dir": str(tmp_path / "run")}))
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    RunLock(tmp_path / "run").__enter__().__exit__(None, None, None)  # free


@pytest.mark.slow
def test_the_lock_of_a_killed_process_is_stale(tmp_path):
    code = (
        f"import os, signal; from axialrope.pipelines.training.run_folder import RunLock; "
        f"RunLock({str(tmp_path / 'run')!r}).__enter__(); os.kill(os.getpid(), signal.SIGKILL)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == -9
    assert (tmp_path / "run" / LOCK_FILE).exists()  # left behind, but nobody holds it
    lines = []
    with RunLock(tmp_path / "run", report=lines.append):
        pass
    assert "took over the lock left by a run that no longer runs (process" in lines[0]


def test_the_loss_log_is_repaired_on_resume_and_says_so(tmp_path):
    path, lines = tmp_path / "loss.jsonl", []
    record = lambda step: json.dumps({"step": step, "loss": 1.0, "lr": 0.1, "seconds": step}) + "\n"  # noqa: E731
    path.write_text(record(1) + "garbage\n" + record(2) + record(3)[:20])  # a damaged line, a write cut short
    log = LossLog(path, resume_step=2, report=lines.append)
    log.write(3, 0.5, 0.1, 3.0)
    assert [r["step"] for r in read_loss_log(path)] == [1, 2, 3] and path.read_text().count("\n") == 3
    assert lines == [
        "resume: loss.jsonl: dropped 1 damaged line(s), its last line, cut short by a crash mid-write; "
        "the log is rewritten without them"
    ]
    path.unlink()
    LossLog(path, resume_step=3, report=lines.append)
    assert lines[-1] == (
        "resume: loss.jsonl is missing; the log goes on from step 4 and holds no records of steps 1 to 3"
    )
    assert path.read_text() == ""


def test_edited_trainer_state_counters_make_the_checkpoint_damaged(finished, tmp_path, capsys):
    run = copy(finished, tmp_path / "run")
    state_file = run / "checkpoints" / "checkpoint-000002" / "trainer_state.json"
    state_file.write_text(json.dumps({**json.loads(state_file.read_text()), "micro_batches": 0}))
    result = loop.train(TrainConfig.from_dict({**RUN, "output_dir": str(run), "resume": "latest"}))
    out = capsys.readouterr().out
    assert "skipping damaged checkpoint checkpoint-000002: trainer_state.json does not match its own digest" in out
    assert result.start_step == 1 and result.steps == 2


def test_while_a_resume_trains_the_run_folder_serves_its_newest_checkpoint(finished, tmp_path, monkeypatch):
    run = copy(finished, tmp_path / "run")
    assert find_in_run(run)[0] == "pipeline"
    seen, published = [], []

    def on_checkpoint(step, folder):
        seen.append(find_in_run(run)[:2])

    real_publish = loop.publish
    monkeypatch.setattr(loop, "publish", lambda a, b: (published.append(Path(b).name), real_publish(a, b))[1])
    loop.train(
        TrainConfig.from_dict({**RUN, "output_dir": str(run), "resume": "latest", "max_steps": 4}),
        on_checkpoint=on_checkpoint,
    )
    assert seen == [("checkpoint", run / "checkpoints" / f"checkpoint-00000{step}") for step in (3, 4)]
    assert published == ["pipeline-config", "model", "model_ema", "pipeline"]  # the run's pipeline/ last
    assert find_in_run(run)[0] == "pipeline"
