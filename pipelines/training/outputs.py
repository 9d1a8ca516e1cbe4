"""What a training run leaves besides checkpoints: the loss log, its plot and a sample grid."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from einops import rearrange
from torchvision.utils import save_image


class LossLog:
    """A JSON-lines file of {"step", "loss", "lr", "seconds"} records, written by the main process.

    `seconds` is the run's time over all its invocations. On a resume from step s the records
    after s (written by the interrupted run after its last checkpoint) are dropped, so the log
    reads as one uninterrupted run. The file is only ever appended to, or replaced atomically
    (when records are dropped, or a fresh run starts in the folder): it never disappears.
    """

    def __init__(self, path: str | Path, resume_step: int = 0):
        from .checkpoints import write_text_atomically

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        records = read_loss_log(self.path)
        kept = [r for r in records if r["step"] <= resume_step] if resume_step else []
        if kept != records or not self.path.exists():
            write_text_atomically(self.path, "".join(json.dumps(r) + "\n" for r in kept))

    def write(self, step: int, loss: float, lr: float, seconds: float) -> None:
        with self.path.open("a") as file:
            file.write(json.dumps({"step": step, "loss": loss, "lr": lr, "seconds": round(seconds, 3)}) + "\n")


def read_loss_log(path: str | Path) -> list[dict]:
    """The records of a loss log (empty if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # blank, or cut short by a crash mid-write: skipped
            continue
    return [r for r in records if isinstance(r, dict) and "step" in r]


def plot_loss(log_path: str | Path, png_path: str | Path) -> None:
    """Plot a loss log: the logged losses and a centred running mean, log-scaled loss axis."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    records = read_loss_log(log_path)
    figure, axis = plt.subplots(figsize=(6, 3.5), dpi=120)
    if records:
        steps = [r["step"] for r in records]
        losses = [r["loss"] for r in records]
        half = max(1, len(losses) // 40)  # a centred running mean: smooth without lagging behind
        smooth = [sum(window) / len(window) for window in
                  (losses[max(0, i - half): i + half + 1] for i in range(len(losses)))]
        axis.plot(steps, losses, alpha=0.35, label="loss")
        axis.plot(steps, smooth, label="smoothed")
        axis.set_yscale("log")
        axis.legend()
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("training loss")
    axis.set_title(Path(log_path).parent.name)
    figure.tight_layout()
    figure.savefig(png_path)
    plt.close(figure)


def save_sample_grid(samples: torch.Tensor, path: str | Path, per_row: int) -> None:
    """Save samples in [-1, 1] as one PNG.

    Args:
        samples: (n, c, h, w) images, `per_row` to a row; or (n, c, t, h, w) videos, one
            video per row with its frames left to right.
    """
    images = (samples.float().clamp(-1, 1) + 1) / 2
    if images.ndim == 5:
        per_row = images.shape[2]
        images = rearrange(images, "n c t h w -> (n t) c h w")
    save_image(images.cpu(), str(path), nrow=per_row, padding=1)
