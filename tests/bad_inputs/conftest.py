"""The catalogue of bad inputs: the kit its cases are made of, and the two checks every case passes.

A Python case is `(id, make, error type, a word of the message)`: `make(kit)` builds the bad
input (files included) in the case's own folder and returns the call that must fail. It must
raise that type with that word, and leave the folder as it was (nothing written, nothing lost).

A CLI case is `pytest.param(make, word, id=...)`: `make(kit)` returns the argv. The command must
exit with code 2 and one line on stderr naming the word, print nothing on stdout, and leave the
folder (which is the working folder, so a default output path would show) as it was.

A handled case is an input the code must take, not refuse, and take right: `(id, make, holds)`,
where `holds(result)` checks what the call returned, and the folder is left as it was. A run case
is `pytest.param(make, code, word, may_change, id=...)`: `axialrope *make(kit)` (a run continuing,
or failing mid-run) exits with `code` naming the word, and loses nothing: every path outside
`may_change` is as it was, none is added.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch


def snapshot(folder: Path) -> dict[str, object]:
    """Every path under `folder` with its bytes (a large file: its size and modification time; a folder or a link:
    None); links are not followed."""

    def state(path: Path):
        if path.is_symlink() or not path.is_file():
            return None
        status = path.stat()
        return path.read_bytes() if status.st_size < 64 << 20 else (status.st_size, status.st_mtime_ns)

    return {str(p.relative_to(folder)): state(p) for p in sorted(folder.rglob("*"))}


# a finished tiny training run: checkpoints at steps 1 and 2 (see `trained_run`), and the flags that made it
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
    report_to="none",
)  # trackers have tests of their own (test_trackers.py)


BEYOND_A_FLOAT = "4" + "0" * 400  # 4 * 10**400: no float holds it, Python's int does
NOT_UTF8 = os.fsdecode(b"caf\xe9")  # a name of Latin-1 bytes, as a command line passes it (surrogate escapes)


# a finished tiny training run on a folder of images, 2 classes of 2 (see `trained_folder_run`)
FOLDER_RUN = {**{name: value for name, value in RUN.items() if name != "dataset_size"}, "batch_size": 2}


def photo_folder(folder: Path, seed: int = 0, classes=("a", "b"), per_class: int = 2, side: int = 16) -> Path:
    """`folder`: class folders of noise PNGs of side x side, other pictures for another seed."""
    from PIL import Image

    generator = torch.Generator().manual_seed(seed)
    for name in classes:
        (folder / name).mkdir(parents=True)
        for index in range(per_class):
            pixels = torch.randint(0, 256, (side, side, 3), generator=generator, dtype=torch.uint8)
            Image.fromarray(pixels.numpy()).save(folder / name / f"{index}.png")
    return folder


def flags(values: dict) -> list[str]:
    """Command-line flags for config values."""
    argv = []
    for key, value in values.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            argv += [flag, "none"]
        elif isinstance(value, list):
            argv += [flag, *map(str, value)]
        else:
            argv += [flag, str(value)]
    return argv


class Kit:
    """What a case is made of: its folder `tmp`, the bundled image pipeline `pipe` (loaded once),
    a finished training run to copy, builders of damaged models and files, and limits on the memory
    and disk the code under test sees (`memory.available_bytes`, `paths.free_bytes`)."""

    def __init__(self, tmp: Path, request):
        self.tmp, self._request = tmp, request

    @property
    def pipe(self):
        return self._request.getfixturevalue("bundled_pipe")

    def run(self, name: str = "run") -> Path:
        """A copy of a finished tiny training run (RUN), in tmp/name."""
        return Path(shutil.copytree(self._request.getfixturevalue("trained_run"), self.tmp / name, symlinks=True))

    def folder_run(self, name: str = "run") -> Path:
        """A copy of a finished tiny training run on a folder of images (FOLDER_RUN), in tmp/name; its config.yaml,
        data.json and checkpoints name the folder it trained on, outside tmp."""
        source = self._request.getfixturevalue("trained_folder_run")
        return Path(shutil.copytree(source, self.tmp / name, symlinks=True))

    def folder_run_argv(self, folder: Path, *extra: str) -> list[str]:
        """`axialrope train` continuing the folder run in `folder` with its own flags (its data from config.yaml)."""
        return ["train", "--output-dir", str(folder), *flags(FOLDER_RUN), *extra]

    def hold_outputs(self, out: Path):
        """Holds the lock of the outputs `axialrope sample --out out` writes, as a second command would."""
        from axialrope.pipelines.publishing import OutputSet

        outputs = OutputSet(out.parent, out.stem).__enter__()
        self._request.addfinalizer(lambda: outputs.__exit__(None, None, None))
        return outputs

    def interrupt(self, owner, name: str, stop: type[BaseException] = KeyboardInterrupt, calls: int = 0) -> None:
        """Calling `owner.name` raises `stop` (Ctrl-C: KeyboardInterrupt; SIGTERM: interrupts.Terminated), as the
        signal would arrive during it, after `calls` calls that run as usual."""
        real, done = getattr(owner, name), []

        def stopped(*args, **kwargs):
            if len(done) >= calls:
                raise stop()
            done.append(None)
            return real(*args, **kwargs)

        self._request.getfixturevalue("monkeypatch").setattr(owner, name, stopped)

    def kill_publish(self, out: Path, new: dict[str, bytes], renames: int) -> None:
        """What `sample --out out` leaves when killed (SIGKILL: nothing of it runs after) while it publishes the
        files `new` (name -> bytes) as its set: the journal written, `renames` moves of old and new files done."""
        from axialrope.pipelines.publishing import OutputSet

        class Killed(BaseException):
            pass

        real, done = os.replace, []

        def replace(source, target):
            if len(done) == renames + 1:  # the first rename publishes the journal itself
                raise Killed()
            done.append(target)
            return real(source, target)

        def write(staging: Path) -> None:
            for name, data in new.items():
                (staging / name).write_bytes(data)

        members = [out.stem + suffix for suffix in (".gif", ".png", ".mp4", "_frames")]
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "replace", replace)
            patch.setattr(OutputSet, "_move_back", lambda *args: (_ for _ in ()).throw(Killed()))  # no clean-up
            with pytest.raises(Killed), OutputSet(out.parent, out.stem) as outputs:
                outputs.publish(members, write)

    def hold_results(self, out: Path):
        """Holds the lock of the calibration results in `out`, as another `axialrope calibrate` would."""
        from axialrope.pipelines.publishing import OutputSet

        results = OutputSet(out, "calibration").__enter__()
        self._request.addfinalizer(lambda: results.__exit__(None, None, None))
        return results

    def read_only(self, folder: Path) -> Path:
        """No file can be made in `folder` for the checks made before writing: chmod, or for root (who writes
        anywhere) the writability probe of `paths` fails there."""
        from axialrope.pipelines import paths

        if os.geteuid() != 0:
            mode = folder.stat().st_mode
            folder.chmod(0o555)
            self._request.addfinalizer(lambda: folder.chmod(mode))
            return folder
        real = paths._check_writable

        def check_writable(where, argument, shown):
            if Path(where).resolve() == folder.resolve():
                raise ValueError(f"{argument} {str(shown)!r}: the folder {str(where)!r} is not writable (read-only)")
            return real(where, argument, shown)

        self._request.getfixturevalue("monkeypatch").setattr(paths, "_check_writable", check_writable)
        return folder

    def run_argv(self, folder: Path, *extra: str) -> list[str]:
        """`axialrope train` continuing or restarting the run in `folder` with its own flags, then `extra`."""
        return ["train", "--output-dir", str(folder), *flags(RUN), *extra]

    def limit_memory(self, gib: float) -> None:
        """The memory pre-flight sees `gib` GiB free, on any machine."""
        from axialrope.pipelines import memory

        self._request.getfixturevalue("monkeypatch").setattr(
            memory, "available_bytes", lambda device="cpu": int(gib * 2**30)
        )

    def limit_disk(self, mib: float) -> None:
        """Every disk has `mib` MiB free, for the checks made before writing."""
        from axialrope.pipelines import paths

        self._request.getfixturevalue("monkeypatch").setattr(paths, "free_bytes", lambda path: int(mib * 2**20))

    def hide_trackers(self) -> None:
        """No experiment tracker's package looks installed (`tracking.installed_trackers`), on any machine."""
        from axialrope.pipelines.training import tracking

        self._request.getfixturevalue("monkeypatch").setattr(tracking, "installed_trackers", lambda: [])

    def hide_package(self, name: str) -> None:
        """Importing the package `name` fails as where it is not installed, on any machine."""
        self._request.getfixturevalue("monkeypatch").setitem(sys.modules, name, None)

    def lock(self, folder: Path):
        """Holds the run lock on `folder` for the case, as a second run in another process would."""
        from axialrope.pipelines.training.run_folder import RunLock

        lock = RunLock(folder, report=lambda line: None).__enter__()
        self._request.addfinalizer(lambda: lock.__exit__(None, None, None))
        return lock

    def fail_write(self, folder: str, name: str, stop: type[BaseException] | None = None) -> None:
        """Writing the state file `name` into a folder named `folder` fails as on a full disk (ENOSPC), or is
        stopped by `stop` (KeyboardInterrupt: Ctrl-C arrives during it)."""
        import errno

        from axialrope.pipelines.training import train_state

        real_write = train_state.write_state

        def write_state(path, value):
            if Path(path).parent.name == folder and Path(path).name == name:
                if stop is not None:
                    raise stop()
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return real_write(path, value)

        self._request.getfixturevalue("monkeypatch").setattr(train_state, "write_state", write_state)

    @staticmethod
    def dit(**overrides):
        from axialrope.models import create_dit

        torch.manual_seed(0)
        return create_dit("tiny", **{"sample_size": 8, "in_channels": 3, "num_classes": 2, **overrides}).eval()

    def model_folder(self, name: str = "model", **overrides) -> Path:
        """A saved tiny DiT (save_pretrained): config.json and safetensors weights."""
        folder = self.tmp / name
        self.dit(**overrides).save_pretrained(folder)
        return folder

    def pipeline_folder(self) -> Path:
        """A copy of the bundled image pipeline, to damage."""
        from axialrope.pipelines.dit.bundled import bundled_model_path

        return Path(shutil.copytree(bundled_model_path("shapes-rope"), self.tmp / "pipe"))

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
        return path

    @staticmethod
    def set_attr(obj, name: str, value):
        """The call `setattr(obj, name, value)`, for the setters' own checks."""
        return lambda: setattr(obj, name, value)

    @staticmethod
    def weights_file(folder: Path) -> Path:
        return folder / "diffusion_pytorch_model.safetensors"

    @staticmethod
    def sparse_tail(file: Path, gib: float) -> Path:
        """`file` grown by `gib` GiB of zeros that take no disk (a sparse file)."""
        os.truncate(file, file.stat().st_size + int(gib * 2**30))
        return file

    @staticmethod
    def claimed_weights(file: Path, gib: float) -> Path:
        """A safetensors file whose header claims one float32 tensor of `gib` GiB, that size on disk (sparse)."""
        count = int(gib * 2**30) // 4
        header = json.dumps({"w": {"dtype": "F32", "shape": [count], "data_offsets": [0, count * 4]}}).encode()
        file.write_bytes(len(header).to_bytes(8, "little") + header)
        os.truncate(file, 8 + len(header) + count * 4)
        return file

    @staticmethod
    def alias_bomb() -> str:
        """A YAML file of a few hundred bytes whose aliases stand for 9^9 strings."""
        lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        lines += [
            f"{new}: &{new} [{', '.join(['*' + old] * 9)}]" for old, new in zip("abcdefgh", "bcdefghi", strict=True)
        ]
        return "\n".join(lines + ["resolution: *i", ""])

    @staticmethod
    def png(width: int, height: int, mode: str = "RGB") -> bytes:
        """A PNG file's bytes (mode "1" keeps a huge one small in memory and on disk)."""
        from PIL import Image

        buffer = io.BytesIO()
        Image.new(mode, (width, height)).save(buffer, format="PNG")
        return buffer.getvalue()

    @staticmethod
    def truncate(path: Path) -> Path:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return path

    @staticmethod
    def edit_json(path: Path, **changes) -> Path:
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
        return path


@pytest.fixture(scope="session")
def bundled_pipe():
    from axialrope.pipelines.dit.bundled import load_pipeline

    return load_pipeline(None, "cpu")


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """A finished tiny training run (RUN), trained once for the session; cases copy it (`Kit.run`)."""
    from axialrope.pipelines.training.config import TrainConfig
    from axialrope.pipelines.training.loop import train

    folder = tmp_path_factory.mktemp("trained") / "run"
    train(TrainConfig.from_dict({**RUN, "output_dir": str(folder)}))
    return folder


@pytest.fixture(scope="session")
def trained_folder_run(tmp_path_factory) -> Path:
    """A finished tiny training run (FOLDER_RUN) on tmp/photos, two classes of two 16x16 images."""
    from axialrope.pipelines.training.config import TrainConfig
    from axialrope.pipelines.training.loop import train

    root = tmp_path_factory.mktemp("trained-on-a-folder")
    data = photo_folder(root / "photos")
    values = {**FOLDER_RUN, "data": "image_folder", "data_dir": str(data), "output_dir": str(root / "run")}
    train(TrainConfig.from_dict(values))
    return root / "run"


@pytest.fixture
def kit(tmp_path, request) -> Kit:
    return Kit(tmp_path, request)


@pytest.fixture
def expect_clear_error(kit):
    """check(make, error, word): the call `make(kit)` returns raises `error` naming `word`, and writes nothing."""

    def check(make, error, word):
        call = make(kit)  # builds the bad input (files included) first
        before = snapshot(kit.tmp)
        with pytest.raises(error) as raised:
            call()
        assert word in str(raised.value)
        assert snapshot(kit.tmp) == before

    return check


@pytest.fixture
def expect_usage_error(kit, monkeypatch, capsys):
    """check(make, word): `axialrope *make(kit)` exits 2 with one line on stderr naming `word`, and writes nothing."""
    from axialrope.pipelines.cli import main

    def check(make, word):
        argv = make(kit)
        monkeypatch.chdir(kit.tmp)  # default outputs (outputs/...) would land here
        before = snapshot(kit.tmp)
        code = main(argv)
        captured = capsys.readouterr()
        message = [line for line in captured.err.splitlines() if line.startswith("axialrope ")]
        assert code == 2 and len(message) == 1 and captured.out == "", (code, captured.err, captured.out)
        assert word in message[0], message[0]
        assert snapshot(kit.tmp) == before

    return check


@pytest.fixture
def expect_handled(kit):
    """check(make, holds): the call `make(kit)` returns succeeds, `holds(its result)` is true, and it writes
    nothing."""

    def check(make, holds):
        call = make(kit)
        before = snapshot(kit.tmp)
        assert holds(call())
        assert snapshot(kit.tmp) == before

    return check


def _within(path: str, names) -> bool:
    return any(path == name or path.startswith(name + "/") for name in names)


@pytest.fixture
def expect_run_outcome(kit, monkeypatch, capsys):
    """check(make, code, word, may_change): `axialrope *make(kit)` exits `code` naming `word` (on a line of its
    own, the one error line when `code` is not 0), and loses nothing: every path outside `may_change` (paths
    in the case's folder: a file, or a folder and everything under it) is as it was, and none is added."""
    from axialrope.pipelines.cli import main

    def check(make, code, word, may_change):
        argv = make(kit)
        monkeypatch.chdir(kit.tmp)
        before = snapshot(kit.tmp)
        returned = main(argv)
        captured = capsys.readouterr()
        lines = (captured.out + captured.err).splitlines()
        if code != 0:
            lines = [line for line in captured.err.splitlines() if line.startswith("axialrope ")]
            assert len(lines) == 1, captured.err[-3000:]
        assert returned == code, captured.err[-3000:]
        assert any(word in line for line in lines), lines
        after = snapshot(kit.tmp)
        assert {p: v for p, v in after.items() if not _within(p, may_change)} == {
            p: v for p, v in before.items() if not _within(p, may_change)
        }

    return check


ULIMIT_V_KIB = 8_000_000  # `ulimit -v 8000000`: the address space the hostile sizes are refused under


@pytest.fixture
def expect_refused_under_ulimit(kit):
    """check(make, word): `axialrope *make(kit)`, run as its own process under `ulimit -v 8000000`, exits 2 with
    one line naming `word`, before any work (within a minute) and without writing anything."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (ULIMIT_V_KIB * 1024, ULIMIT_V_KIB * 1024))

    def check(make, word):
        argv = make(kit)
        before = snapshot(kit.tmp)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "axialrope.pipelines.cli", *argv],
            cwd=kit.tmp,
            capture_output=True,
            text=True,
            timeout=600,
            preexec_fn=limit,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        message = [line for line in done.stderr.splitlines() if line.startswith("axialrope ")]
        assert done.returncode == 2 and len(message) == 1, done.stderr[-3000:]
        assert word in message[0], message[0]
        assert time.monotonic() - started < 120  # refused, not worked through
        assert snapshot(kit.tmp) == before

    return check
