"""What a training run leaves besides checkpoints: the loss log, its plot and a sample grid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from einops import rearrange
from torchvision.utils import save_image

from axialrope.validation import is_int, is_real

from ..paths import write_text_atomically


class LossLog:
    """A JSON-lines file of {"step", "loss", "lr", "seconds"} records, written by the main process.

    `seconds` is the run's time over all its invocations. A fresh run (resume_step 0) starts an
    empty log. A resume from step s keeps the records up to s and drops those after it (written by
    the interrupted run after its last checkpoint), and repairs what a crash or an edit left: a line
    cut short, a damaged line, records out of order, a missing file; `report` gets a line for each
    repair. The file is only ever appended to, or replaced atomically: it never disappears.
    """

    def __init__(self, path: str | Path, resume_step: int = 0, report: Callable[[str], None] = print):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = self.path.read_text(errors="replace") if self.path.exists() else None
        kept: list[dict] = []
        if resume_step and text is None:
            report(
                f"resume: {self.path.name} is missing; the log goes on from step {resume_step + 1} and holds no "
                f"records of steps 1 to {resume_step}"
            )
        elif resume_step:
            records, damaged = _parse_log(text)
            kept = [r for r in records if r["step"] <= resume_step]
            if damaged:
                report(f"resume: {self.path.name}: dropped {damaged}; the log is rewritten without them")
        canonical = "".join(json.dumps(r) + "\n" for r in kept)
        if text != canonical:
            write_text_atomically(self.path, canonical)

    def write(self, step: int, loss: float, lr: float, seconds: float) -> None:
        with self.path.open("a") as file:
            file.write(json.dumps({"step": step, "loss": loss, "lr": lr, "seconds": round(seconds, 3)}) + "\n")


def _is_record(value) -> bool:
    return (
        isinstance(value, dict)
        and is_int(value.get("step"))
        and all(is_real(value.get(key)) for key in ("loss", "lr", "seconds"))
    )


def _parse_log(text: str) -> tuple[list[dict], str]:
    """The records of a loss log's text, in increasing step order, and what was dropped ("" if nothing)."""
    lines = text.split("\n")
    cut = False
    records, bad, unordered = [], 0, 0
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        last = index == len(lines) - 1
        if not _is_record(record):
            if last:  # "" after the final newline; anything else is a line whose write a crash stopped
                cut = line != ""
            else:
                bad += line.strip() != ""
        elif records and record["step"] <= records[-1]["step"]:
            unordered += 1
        else:
            records.append(record)
    dropped = [f"{bad} damaged line(s)"] if bad else []
    dropped += [f"{unordered} record(s) out of step order"] if unordered else []
    dropped += ["its last line, cut short by a crash mid-write"] if cut else []
    return records, ", ".join(dropped)


def read_loss_log(path: str | Path) -> list[dict]:
    """The records of a loss log (empty if the file does not exist); damaged lines are skipped."""
    path = Path(path)
    return _parse_log(path.read_text(errors="replace"))[0] if path.exists() else []


def plot_loss(log_path: str | Path, png_path: str | Path) -> None:
    """Plot a loss log: the logged losses and a centred running mean, log-scaled loss axis."""
    import matplotlib  # heavy; selects Agg backend

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt  # after Agg is chosen

    records = read_loss_log(log_path)
    figure, axis = plt.subplots(figsize=(6, 3.5), dpi=120)
    if records:
        steps = [r["step"] for r in records]
        losses = [r["loss"] for r in records]
        half = max(1, len(losses) // 40)  # a centred running mean: smooth without lagging behind
        smooth = [
            sum(window) / len(window)
            for window in (losses[max(0, i - half) : i + half + 1] for i in range(len(losses)))
        ]
        axis.plot(steps, losses, alpha=0.35, label="loss")
        axis.plot(steps, smooth, label="smoothed")
        axis.set_yscale("log")
        axis.legend()
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("training loss")
    axis.set_title(Path(log_path).parent.name)
    figure.tight_layout()
    figure.savefig(png_path, format="png")
    plt.close(figure)


def save_sample_grid(samples: torch.Tensor, path: str | Path, per_row: int) -> None:
    """Save samples in [-1, 1] as one PNG (whatever the name of `path` ends in).

    Args:
        samples: (n, c, h, w) images, `per_row` to a row; or (n, c, t, h, w) videos, one
            video per row with its frames left to right.
    """
    images = (samples.float().clamp(-1, 1) + 1) / 2
    if images.ndim == 5:
        per_row = images.shape[2]
        images = rearrange(images, "n c t h w -> (n t) c h w")
    save_image(images.cpu(), str(path), nrow=per_row, padding=1, format="png")
