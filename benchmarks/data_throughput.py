"""Does the data pipeline keep up with training? Images/s of the dataset vs images/s of a training step.

For each size, in one process on the same batch size: the procedural dataset rendered
through the training DataLoader (bucket sampler, `__getitems__`), and one optimizer step
of the model (rectified-flow loss, backward, AdamW) of the training config. A ratio above 1
means the data are produced faster than training consumes them (with num_workers=0, so
the data time adds to the step; workers would hide it entirely).

    python benchmarks/data_throughput.py                      # tiny model, 32x32 and 64x64, video 8x32x32
    python benchmarks/data_throughput.py --quick              # fewer repeats
    python benchmarks/data_throughput.py --sizes 32 --batch-size 64 --model-size S
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from axialrope.pipelines.objectives import make_objective, training_loss
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loaders import build_dataset, build_loader
from axialrope.pipelines.training.loop import build_model


def _median_seconds(fn, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(config: TrainConfig, repeats: int) -> tuple[float, float]:
    """(dataset items/s, training-step items/s) for one config."""
    dataset = build_dataset(config)
    loader, _ = build_loader(config, dataset)
    batches = iter(loader)
    data_seconds = _median_seconds(lambda: next(batches), repeats)

    torch.manual_seed(0)
    model = build_model(config, dataset.num_classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    objective = make_objective(config.objective)
    batch = next(batches)
    labels = batch.get("class_labels") if model.null_class is not None else None

    def step():
        loss = training_loss(model, objective, batch["pixel_values"], labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step_seconds = _median_seconds(step, repeats)
    return config.batch_size / data_seconds, config.batch_size / step_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes",
        nargs="+",
        default=["32", "64", "8x32x32"],
        help="image sizes N or HxW; TxHxW for moving shapes (video)",
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--model-size", default="tiny")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 repeats")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats

    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, batch {args.batch_size}, "
        f"model {args.model_size}, median of {repeats}"
    )
    print("| data | size | dataset items/s | training items/s | dataset / training |")
    print("| --- | --- | ---: | ---: | ---: |")
    for size in args.sizes:
        data = "moving_shapes" if size.count("x") == 2 else "shapes"
        config = TrainConfig(
            data=data, resolution=[size], batch_size=args.batch_size, model_size=args.model_size, dataset_size=100_000
        ).validate()
        data_rate, train_rate = measure(config, repeats)
        print(f"| {data} | {size} | {data_rate:,.0f} | {train_rate:,.0f} | {data_rate / train_rate:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
