"""The catalogue of bad inputs: the kit its cases are made of, and the two checks every case passes.

A Python case is `(id, make, error type, a word of the message)`: `make(kit)` builds the bad
input (files included) in the case's own folder and returns the call that must fail. It must
raise that type with that word, and leave the folder as it was (nothing written, nothing lost).

A CLI case is `pytest.param(make, word, id=...)`: `make(kit)` returns the argv. The command must
exit with code 2 and one line on stderr naming the word, print nothing on stdout, and leave the
folder (which is the working folder, so a default output path would show) as it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for a folder); links are not followed."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in sorted(folder.rglob("*"))}


class Kit:
    """What a case is made of: its folder `tmp`, the bundled image pipeline `pipe` (loaded once),
    and builders of damaged models and files."""

    def __init__(self, tmp: Path, load_pipe):
        self.tmp, self._load_pipe = tmp, load_pipe

    @property
    def pipe(self):
        return self._load_pipe()

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
        from axialrope.pipelines.sampling.bundled import bundled_model_path

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
    def truncate(path: Path) -> Path:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        return path

    @staticmethod
    def edit_json(path: Path, **changes) -> Path:
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
        return path


@pytest.fixture(scope="session")
def bundled_pipe():
    from axialrope.pipelines.sampling.bundled import load_pipeline

    return load_pipeline(None, "cpu")


@pytest.fixture
def kit(tmp_path, request) -> Kit:
    return Kit(tmp_path, lambda: request.getfixturevalue("bundled_pipe"))


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
