"""Do the video models move shapes as rigid bodies? Shape persistence and SWD at the trained size.

Each model samples the same seeds and class labels at its trained size; real renders of the same
labels are the reference. Columns: frame SWD and motion SWD (of frame differences), x1e3, against real
clips (the real row: a second real set, the floor); persistence at lag L, the silhouettes' IoU in
frames t and t + L at the best shift (`metrics.shape_persistence`; 1: rigid motion). Flow-matching
models only.

    python benchmarks/video_motion.py --threads 2        # the bundled video model
    python benchmarks/video_motion.py --models moving-shapes-rope outputs/run/model_ema

Writes video_motion.md / .csv and video_motion.png (the first clips of each model) into --out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from reporting import save_labelled_grid, write_table
from samples_and_real import FLOOR_SEED, REAL_SEED, Method, fastest_shift, generate, real_videos

from axialrope.pipelines.data.scenes import SHAPE_KINDS
from axialrope.pipelines.dit.bundled import load_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.evaluation.metrics import shape_persistence, video_swd

LAGS = (1, 3, 7)


def persistences(videos: torch.Tensor) -> list[float]:
    """Shape persistence at each lag of LAGS, allowing the shift the fastest shape makes in that time."""
    height, width = videos.shape[-2:]
    return [shape_persistence(videos, lag, fastest_shift(lag, height, width)) for lag in LAGS]


def zoomed(clip: torch.Tensor, zoom: int) -> torch.Tensor:
    """A clip (3, t, h, w) as its frames (t, 3, zoom * h, zoom * w), pixels repeated."""
    return F.interpolate(clip.transpose(0, 1), scale_factor=zoom, mode="nearest")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        nargs="+",
        default=["moving-shapes-rope"],
        help="video models: bundled names, pipeline folders or a run's model_ema/",
    )
    parser.add_argument("--num", type=int, default=32, help="clips per model")
    parser.add_argument("--steps", type=int, default=20, help="sampler steps")
    parser.add_argument("--guidance", type=float, default=2.0, help="classifier-free guidance scale")
    parser.add_argument("--seed", type=int, default=0, help="noise seed")
    parser.add_argument("--show", type=int, default=6, help="clips per model in the picture")
    parser.add_argument("--zoom", type=int, default=2, help="pixel repeat of the picture's frames")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    if not 1 <= args.show <= args.num:
        parser.error(f"--show must be between 1 and --num ({args.num}), got {args.show}")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)

    header = ["model", "frame SWD", "motion SWD", *[f"persistence lag {lag}" for lag in LAGS]]
    rows, picture = [], {}
    trained_size = None
    for index, name in enumerate(args.models, start=1):
        pipe = AxialDiTPipeline.from_model(load_dit(name), "flow")
        pipe.set_progress_bar_config(disable=True)
        if not pipe.is_video:
            raise ValueError(f"--models: {name!r} is an image model; this benchmark compares video models")
        if trained_size is None:
            trained_size = pipe.trained_size
            real, labels = real_videos(args.num, *trained_size, REAL_SEED)
            floor = video_swd(real_videos(args.num, *trained_size, FLOOR_SEED)[0], real)
            rows.append(["real clips", floor["frame_swd"], floor["motion_swd"], *persistences(real)])
            for clip in range(args.show):
                picture[f"real {SHAPE_KINDS[int(labels[clip])]}"] = zoomed(real[clip], args.zoom)
        elif pipe.trained_size != trained_size:
            raise ValueError(f"--models: {name!r} was trained at {pipe.trained_size}, the first at {trained_size}")
        start = time.perf_counter()
        # no size given: the pipeline samples at the model's trained size
        samples = generate(pipe, Method("none"), labels, {}, args.steps, args.guidance, args.seed)
        scores = video_swd(samples, real)
        rows.append([f"{index}: {name}", scores["frame_swd"], scores["motion_swd"], *persistences(samples)])
        print(
            " | ".join(f"{v:.3f}" if isinstance(v, float) else v for v in rows[-1]),
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
        for clip in range(args.show):
            picture[f"{index}: {SHAPE_KINDS[int(labels[clip])]}"] = zoomed(samples[clip], args.zoom)

    write_table(args.out / "video_motion", header, rows)
    frames = trained_size[0]
    save_labelled_grid(
        args.out / "video_motion.png",
        "clips, frames left to right (rows: real, then model 1, 2, ...)",
        picture,
        per_row=frames,
    )
    print(f"wrote {args.out / 'video_motion.md'} and video_motion.png")


if __name__ == "__main__":
    main()
