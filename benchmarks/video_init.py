"""Does starting the video DiT from the bundled image DiT help, and does matching RoPE channels matter?

On the bundled video recipe (mini DiT, 8 frames of 32x32 moving shapes): (1) on still clips, the relative
L2 error of the inflated video model's prediction per frame against the image model's, for both ways of
mapping q/k channels (`inflate_from_image(match_frequencies=...)`); (2) the flow loss on moving clips
before training, per start and for temporal patches 1 and 2; (3) short training runs (temporal patch 1)
from scratch, inflated with channels copied in place, and inflated with channels matched by frequency.

    python benchmarks/video_init.py                 # 300 steps per run
    python benchmarks/video_init.py --steps 50      # a quick look

Writes benchmarks/results/video_init.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import torch

from axialrope.models import create_dit
from axialrope.models.axial_dit.inflate import inflate_from_image
from axialrope.pipelines.data.procedural import MovingShapesDataset, ShapesDataset
from axialrope.pipelines.dit.bundled import load_dit
from axialrope.pipelines.objectives import make_objective, training_loss
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loop import train

SIGMAS = (0.25, 0.5, 0.75)
STARTS = {"from scratch": None, "inflated, channels in place": False, "inflated, channels matched": True}


@functools.cache
def image_dit():
    """The bundled image model, loaded once (inflation reads it and leaves it unchanged)."""
    return load_dit("shapes-rope")


def video_dit(match_frequencies: bool | None, temporal_patch_size: int = 1):
    """The bundled video model's shape; inflated from the bundled image model unless match_frequencies is None."""
    model = create_dit(
        "mini",
        in_channels=3,
        sample_size=(32, 32),
        num_frames=8,
        patch_size=4,
        temporal_patch_size=temporal_patch_size,
        num_classes=6,
    )
    if match_frequencies is not None:
        inflate_from_image(image_dit(), model, match_frequencies=match_frequencies)
    return model


@torch.no_grad()
def static_clip_errors(num: int = 16, frames: int = 8) -> dict[str, list[float]]:
    """Per start and noise level: relative L2 error on static clips against the image model."""
    image = image_dit()
    data = ShapesDataset(num, seed=1)
    x = torch.stack([data[i]["pixel_values"] for i in range(num)])
    labels = torch.tensor([int(data[i]["class_labels"]) for i in range(num)])
    errors = {}
    for name, match in list(STARTS.items())[1:]:
        video, generator = video_dit(match), torch.Generator().manual_seed(0)
        errors[name] = []
        for sigma in SIGMAS:
            noisy = (1 - sigma) * x + sigma * torch.randn(x.shape, generator=generator)
            t = torch.full((num,), sigma * 1000)
            reference = image(noisy, t, labels).sample.unsqueeze(2).expand(-1, -1, frames, -1, -1)
            predicted = video(noisy.unsqueeze(2).expand(-1, -1, frames, -1, -1).contiguous(), t, labels).sample
            errors[name].append(float((predicted - reference).norm() / reference.norm()))
    return errors


@torch.no_grad()
def initial_losses(num: int = 32, repeats: int = 4) -> dict[tuple[str, int], float]:
    """Per (start, temporal patch): the flow loss on moving clips before training (same noise for all)."""
    data = MovingShapesDataset(num, seed=5)
    clips = torch.stack([data[i]["pixel_values"] for i in range(num)])
    labels = torch.tensor([int(data[i]["class_labels"]) for i in range(num)])
    objective = make_objective("flow", "logit_normal")
    losses = {}
    for r in (1, 2):
        for name, match in STARTS.items():
            torch.manual_seed(0)  # the scratch weights
            model, generator = video_dit(match, r), torch.Generator().manual_seed(1)
            losses[name, r] = (
                sum(training_loss(model, objective, clips, labels, generator).item() for _ in range(repeats)) / repeats
            )
    return losses


def short_run(name: str, init_from: str | None, steps: int, out: Path) -> dict[str, float]:
    """Train the video recipe for `steps` (constant lr after warmup, no EMA); loss at start and end, s/step."""
    config = TrainConfig(
        data="moving_shapes",
        resolution=["8x32x32"],
        temporal_patch_size=1,
        model_size="mini",
        patch_size=4,
        batch_size=8,
        learning_rate=5e-4,
        lr_warmup_steps=50,
        lr_scheduler="constant_with_warmup",
        ema_decay=0,
        max_steps=steps,
        checkpointing_steps=steps,
        sample_steps=2,
        samples_per_class=1,
        init_from=init_from,
        output_dir=str(out / name),
        log_every=10,
        seed=0,
    )
    result = train(config)
    losses = [json.loads(line)["loss"] for line in (out / name / "loss.jsonl").read_text().splitlines()]
    return {"first": losses[0], "last": sum(losses[-5:]) / len(losses[-5:]), "s/step": result.seconds / steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps per training run")
    parser.add_argument("--work", type=Path, default=Path("outputs/video_init"), help="folder for the runs")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    lines = [
        "# Starting the video DiT from the image DiT",
        "",
        f"Generated by `python benchmarks/video_init.py --steps {args.steps}`. The image model is the bundled "
        "`shapes-rope`; the video model has its shape with 8 frames (3D RoPE channels (8, 12, 12) per head "
        "against the image's (16, 16)).",
        "",
        "## 1. Static clips: relative L2 error against the image model (temporal patch 1)",
        "",
        "| q/k channels | " + " | ".join(f"sigma {s}" for s in SIGMAS) + " |",
        "|---|" + "---|" * len(SIGMAS),
    ]
    lines += [f"| {name} | " + " | ".join(f"{e:.3f}" for e in row) + " |" for name, row in static_clip_errors().items()]

    losses = initial_losses()
    lines += [
        "",
        "## 2. Flow loss on moving clips before training (32 clips x 4 noise draws)",
        "",
        "| start | temporal patch 1 | temporal patch 2 |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {losses[name, 1]:.4f} | {losses[name, 2]:.4f} |" for name in STARTS]

    folders = {"from scratch": None}
    for name, match in list(STARTS.items())[1:]:  # each inflated start as a model folder `init_from` reads
        folders[name] = str(args.work / f"init-{match}")
        video_dit(match).save_pretrained(folders[name])
    runs = {
        name: short_run(f"run-{i}", folder, args.steps, args.work) for i, (name, folder) in enumerate(folders.items())
    }
    lines += [
        "",
        f"## 3. Training loss, temporal patch 1 ({args.steps} steps, batch 8, lr 5e-4 after 50 warmup steps)",
        "",
        "| start | steps 1-10 | last 50 steps | s/step |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {r['first']:.4f} | {r['last']:.4f} | {r['s/step']:.3f} |" for name, r in runs.items()]
    lines += [
        "",
        f"Total {time.perf_counter() - started:.0f} s. One seed: loss differences below about 0.005 are noise.",
    ]
    (args.out / "video_init.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
