"""Do the models draw recognisable shapes? A shape classifier's verdict on their samples.

A small CNN learns the main shape of real renders at 32x32 (any rotation, randomly blurred a little),
trained once and cached in outputs/shape_classifier.pt. Each model samples --per-class clips or
images per class at its trained size, and the table gives the share the classifier reads as the
class asked for, per class and overall; video is read frame by frame ("whole clips": every frame right).

    python benchmarks/shape_recognition.py --threads 2     # the bundled models
    python benchmarks/shape_recognition.py --models shapes-rope outputs/run/model_ema
    python benchmarks/shape_recognition.py --models shapes-rope shapes-sincos --guidance 1 2 3 4 6 \
        --name shape_recognition_guidance
    python benchmarks/shape_recognition.py --scene-rotation 1 --models outputs/run-any-rotation/model_ema

Writes <name>.md / .csv (default shape_recognition) into --out (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from einops import rearrange
from reporting import write_table
from samples_and_real import REAL_SEED, Method, generate
from torch import nn
from torchvision.transforms.functional import gaussian_blur
from tqdm import tqdm

from axialrope.pipelines.data.render import render_images
from axialrope.pipelines.data.scenes import SHAPE_KINDS, SceneConfig, sample_scenes
from axialrope.pipelines.dit.bundled import load_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

SIZE = 32  # the classifier reads 32x32 images, the bundled models' trained size
CLASSIFIER_SETTINGS = {"steps": 2000, "batch": 64, "lr": 2e-3, "seed": 0, "version": 1}
DEFAULT_CACHE = Path("outputs/shape_classifier.pt")


def shape_classifier() -> nn.Sequential:
    """(n, 3, 32, 32) in [0, 1] -> (n, 6) logits over SHAPE_KINDS: three conv stages, then a linear read-out."""

    def stage(channels_in: int, channels_out: int) -> nn.Sequential:
        return nn.Sequential(
            nn.Conv2d(channels_in, channels_out, 3, padding=1), nn.BatchNorm2d(channels_out), nn.ReLU(), nn.MaxPool2d(2)
        )

    return nn.Sequential(
        stage(3, 32),
        stage(32, 64),
        stage(64, 128),
        nn.Conv2d(128, 128, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, len(SHAPE_KINDS)),
    )


def soften(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Blur half of a batch (n, 3, h, w) with a random sigma in [0.3, 1.2] px and add faint noise."""
    sigma = 0.3 + 0.9 * torch.rand((), generator=generator).item()
    half = images.shape[0] // 2
    blurred = torch.cat([gaussian_blur(images[:half], kernel_size=5, sigma=sigma), images[half:]])
    return (blurred + 0.02 * torch.randn(images.shape, generator=generator)).clamp(0, 1)


def train_classifier(steps: int, batch: int, lr: float, seed: int) -> nn.Sequential:
    """A shape classifier trained on fresh renders of the training scene family (seed 0), at any rotation."""
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    model = shape_classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    model.train()
    for step in tqdm(range(steps), desc="shape classifier"):
        scenes = sample_scenes(0, range(step * batch, (step + 1) * batch), SceneConfig(rotation=1))
        images = soften(render_images(scenes, SIZE, SIZE), generator)
        loss = F.cross_entropy(model(images * 2 - 1), scenes.labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return model.eval()


def load_or_train_classifier(cache: Path) -> nn.Sequential:
    """The cached classifier if it was trained with CLASSIFIER_SETTINGS, else a new one (saved atomically)."""
    if cache.exists():
        saved = torch.load(cache, weights_only=True)
        if saved["settings"] == CLASSIFIER_SETTINGS:
            model = shape_classifier()
            model.load_state_dict(saved["weights"])
            return model.eval()
    settings = {k: v for k, v in CLASSIFIER_SETTINGS.items() if k != "version"}
    model = train_classifier(**settings)
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".partial")
    torch.save({"settings": CLASSIFIER_SETTINGS, "weights": model.state_dict()}, partial)
    os.replace(partial, cache)
    return model


@torch.no_grad()
def predict(classifier: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    """(n, 3, 32, 32) in [0, 1] -> (n,) predicted class."""
    return torch.cat([classifier(chunk * 2 - 1).argmax(-1) for chunk in images.split(256)])


def recognition_row(name: str, predicted: torch.Tensor, labels: torch.Tensor) -> list:
    """[name, per-class accuracy ..., overall, whole clips]; predicted is (n,) or (n, frames)."""
    correct = (predicted == labels.view(-1, *[1] * (predicted.dim() - 1))).float()
    per_class = [correct[labels == k].mean().item() for k in range(len(SHAPE_KINDS))]
    whole = correct.amin(-1).mean().item() if predicted.dim() == 2 else "-"
    return [name, *per_class, correct.mean().item(), whole]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=["shapes-rope", "shapes-sincos", "moving-shapes-rope"],
        help="image or video models trained at 32x32: bundled names, pipeline folders or model_ema/",
    )
    parser.add_argument("--per-class", type=int, default=32, help="samples per class and model")
    parser.add_argument("--steps", type=int, default=20, help="sampler steps")
    parser.add_argument(
        "--guidance",
        type=float,
        nargs="+",
        default=[2.0],
        help="classifier-free guidance scales (a row per model and scale)",
    )
    parser.add_argument("--seed", type=int, default=0, help="noise seed")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--classifier", type=Path, default=DEFAULT_CACHE, help="where the classifier is cached")
    parser.add_argument(
        "--scene-rotation",
        type=float,
        default=SceneConfig().rotation,
        help="rotation (turns) of the held-out real renders: the models' --scene-rotation",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    parser.add_argument("--name", default="shape_recognition", help="file name of the table (.md and .csv)")
    args = parser.parse_args()
    if args.per_class < 1:
        parser.error(f"--per-class must be a positive integer, got {args.per_class}")
    try:
        real_scenes = SceneConfig(rotation=args.scene_rotation)
    except ValueError as error:
        parser.error(f"--scene-rotation: {error}")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    classifier = load_or_train_classifier(args.classifier)

    labels = torch.arange(len(SHAPE_KINDS)).repeat(args.per_class)
    header = ["model", *SHAPE_KINDS, "all", "whole clips"]
    held_out = sample_scenes(REAL_SEED, range(1024), real_scenes)
    rotation = ", upright" if args.scene_rotation == 0 else f", rotation up to {args.scene_rotation:g} turn"
    rows = [
        recognition_row(
            f"real renders (held out, 1024{rotation})",
            predict(classifier, render_images(held_out, SIZE, SIZE)),
            held_out.labels,
        )
    ]
    for index, name in enumerate(args.models, start=1):
        pipe = AxialDiTPipeline.from_model(load_dit(name), "flow")
        pipe.set_progress_bar_config(disable=True)
        if pipe.trained_size[-2:] != (SIZE, SIZE):
            raise ValueError(
                f"--models: {name!r} was trained at {pipe.trained_size}; the classifier reads {SIZE}x{SIZE}"
            )
        for scale in args.guidance:
            start = time.perf_counter()
            # no size given: the pipeline samples at the model's trained size
            samples = generate(pipe, Method("none"), labels, {}, args.steps, scale, args.seed)
            if pipe.is_video:
                frames = rearrange(samples, "n c t h w -> (n t) c h w")
                predicted = rearrange(predict(classifier, frames), "(n t) -> n t", n=len(labels))
            else:
                predicted = predict(classifier, samples)
            label = f"{index}: {name}" + (f", guidance {scale:g}" if len(args.guidance) > 1 else "")
            rows.append(recognition_row(label, predicted, labels))
            print(
                " | ".join(f"{v:.2f}" if isinstance(v, float) else v for v in rows[-1]),
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    write_table(args.out / args.name, header, rows)
    print(f"wrote {args.out / args.name}.md")


if __name__ == "__main__":
    main()
