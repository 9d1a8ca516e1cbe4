"""Context extension of a tiny RoPE language model: passkey retrieval and perplexity beyond 128 tokens.

Trains a `TinyCausalLM` on the synthetic language of `axialrope.pipelines.data.text` at
length 128 (cached under outputs/), then scores it at 2x, 4x and 8x that length under
every RoPE scaling of the core (none, linear = PI, ntk, dynamic, yarn, llama3) with
factor s = eval length / 128: training-free (the same weights, only the frequencies
change), and after a short fine-tune at the longer length for none, PI and YaRN.

    python benchmarks/context_extension.py            # docs/text.md's numbers
    python benchmarks/context_extension.py --quick    # smoke run, a few minutes

Writes <out>/context_extension.{md,json,png}.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch

from axialrope.models import TextLMConfig, TinyCausalLM
from axialrope.pipelines.data.text import SyntheticLanguage
from axialrope.pipelines.evaluation.text_lm import passkey_accuracy, perplexity
from axialrope.pipelines.training.text_lm import TEXT_LR_SCHEDULERS, load_checkpoint, save_checkpoint, train_lm

CACHE_VERSION = 2  # bump when training or data code changes what a cached checkpoint would be
METHODS = ("none", "linear", "ntk", "dynamic", "yarn", "llama3")
# PI (Chen et al. 2023) and YaRN (Peng et al. 2023) are fine-tuning recipes; "none" fine-tuned
# at the long length is the PI paper's own control ("direct extrapolation" fine-tuning).
# NTK-aware and dynamic NTK were proposed as training-free; llama3 is Llama 3.1's fixed recipe.
FINETUNED = ("none", "linear", "yarn")
LABELS = {
    "none": "none",
    "linear": "linear (PI)",
    "ntk": "ntk",
    "dynamic": "dynamic",
    "yarn": "yarn",
    "llama3": "llama3",
}


def scaling_for(method: str, factor: float, trained: int) -> dict | None:
    """The transformers-format rope scaling dict of `method` with the papers' parameters."""
    if method == "none":
        return None
    if method in ("linear", "ntk"):
        return {"rope_type": method, "factor": factor}
    common = {"rope_type": method, "factor": factor, "original_max_position_embeddings": trained}
    if method == "dynamic":
        return common
    if method == "yarn":  # beta_fast 32, beta_slow 1, mscale 0.1 ln s + 1: the paper's Llama values
        return {**common, "beta_fast": 32.0, "beta_slow": 1.0}
    if method == "llama3":  # Llama 3.1's band edges
        return {**common, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


@dataclass(frozen=True)
class Settings:
    train_len: int = 128
    multiples: tuple[int, ...] = (2, 4, 8)
    model: dict = field(default_factory=lambda: dict(dim=64, depth=2, num_heads=2, num_kv_heads=1, theta=10000.0))
    language: dict = field(default_factory=dict)
    passkey_fraction: float = 0.5
    train_steps: int = 4000
    batch: int = 16
    lr: float = 3e-3
    finetune_steps: int = 50
    finetune_lr: float = 1e-3
    n_passkey: int = 100
    n_perplexity: int = 32
    seed: int = 0
    lr_scheduler: str = "cosine_to_tenth"

    @property
    def lengths(self) -> list[int]:
        return [self.train_len * m for m in self.multiples]

    def key(self, *parts) -> str:
        """A short hash of everything that determines a trained model (defaults of the language too)."""
        language = dataclasses.asdict(SyntheticLanguage(**self.language))
        text = json.dumps([CACHE_VERSION, dataclasses.asdict(self), language, *parts], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


FULL = Settings()
QUICK = dataclasses.replace(FULL, multiples=(2, 4), train_steps=150, finetune_steps=10, n_passkey=16, n_perplexity=8)


def cached_model(path: Path, build, device) -> tuple[TinyCausalLM, dict]:
    """Loads `path` if it exists, else `build()`s a model and saves it there (atomically).

    Returns the model and its metadata: {"train_seconds", "threads", "loaded"}; the first two
    are those of the run that trained it, so a cached rerun still reports what training cost.
    """
    if path.exists():
        model, metadata = load_checkpoint(path, device)
        return model, {**metadata, "loaded": True}
    started = time.perf_counter()
    model = build()
    metadata = {"train_seconds": round(time.perf_counter() - started, 1), "threads": torch.get_num_threads()}
    save_checkpoint(model, path, metadata)
    return model, {**metadata, "loaded": False}


def train_base(settings: Settings, language: SyntheticLanguage, device) -> TinyCausalLM:
    torch.manual_seed(settings.seed)
    model = TinyCausalLM(TextLMConfig(vocab_size=language.vocab_size, **settings.model)).to(device)
    rng = random.Random(settings.seed)
    train_lm(
        model,
        lambda step: language.training_batch(settings.batch, settings.train_len, rng, settings.passkey_fraction),
        settings.train_steps,
        lr=settings.lr,
        warmup=min(100, settings.train_steps // 10),
        progress="base",
        lr_scheduler=settings.lr_scheduler,
    )
    return model


def fine_tune(base_path: Path, settings: Settings, language: SyntheticLanguage, method: str, length: int, device):
    """Base weights, `method` scaled to `length`, trained `finetune_steps` steps at that length.

    Same number of tokens per step as base training: batch * train_len // length rows.
    """
    model, _ = load_checkpoint(base_path, device)
    model.set_rope_scaling(scaling_for(method, length / settings.train_len, settings.train_len))
    rows = max(1, settings.batch * settings.train_len // length)
    rng = random.Random(settings.seed + length)
    train_lm(
        model,
        lambda step: language.training_batch(rows, length, rng, settings.passkey_fraction),
        settings.finetune_steps,
        lr=settings.finetune_lr,
        warmup=max(1, settings.finetune_steps // 10),
        progress=f"fine-tune {method} @{length}",
        lr_scheduler=settings.lr_scheduler,
    )
    return model


def evaluation_sets(settings: Settings, language: SyntheticLanguage) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Per length: (passkey sequences, language sequences), from seeds apart from training's."""
    sets = {}
    for length in [settings.train_len, *settings.lengths]:
        rng = random.Random(10_000 * (settings.seed + 1) + length)
        sets[length] = (
            language.passkey_batch(settings.n_passkey, length, rng),
            language.language_batch(settings.n_perplexity, length, rng),
        )
    return sets


def score(model: TinyCausalLM, sets, method: str, regime: str, length: int, factor: float) -> dict:
    """One result row: `model` (already scaled by `factor`) on the sets of `length`."""
    passkeys, text = sets[length]
    row = {
        "method": method,
        "regime": regime,
        "length": length,
        "factor": factor,
        "passkey": passkey_accuracy(model, passkeys),
        "ppl": perplexity(model, text),
    }
    print(json.dumps(row), file=sys.stderr)
    return row


def columns(settings: Settings) -> list[tuple[int, float, str]]:
    """(length, factor, header) of each table column: the trained length twice (unscaled, and
    with the largest factor, which shows what a method costs where no extension is needed),
    then each longer length with its own factor."""
    trained, widest = settings.train_len, max(settings.multiples)
    return [(trained, 1.0, f"{trained} (1x)"), (trained, float(widest), f"{trained}, set for {widest}x")] + [
        (length, length / trained, f"{length} ({length // trained}x)") for length in settings.lengths
    ]


def markdown(results: list[dict], settings: Settings, notes: list[str]) -> str:
    rows = sorted(
        {(r["method"], r["regime"]) for r in results}, key=lambda mr: (mr[1] != "training-free", METHODS.index(mr[0]))
    )
    cell = {(r["method"], r["regime"], r["length"], r["factor"]): r for r in results}
    header = "| method | regime | " + " | ".join(title for _, _, title in columns(settings)) + " |"
    rule = "|---|---|" + "---:|" * len(columns(settings))
    out = []
    for metric, title, fmt in (
        ("passkey", "Passkey retrieval accuracy (all 5 digits right; higher is better)", "{:.2f}"),
        ("ppl", "Perplexity of the synthetic language (lower is better)", "{:.2f}"),
    ):
        out += [f"**{title}**", "", header, rule]
        for method, regime in rows:
            values = [cell.get((method, regime, length, factor)) for length, factor, _ in columns(settings)]
            out.append(
                f"| {LABELS[method]} | {regime} | "
                + " | ".join("–" if v is None else fmt.format(v[metric]) for v in values)
                + " |"
            )
        out.append("")
    return "\n".join(out + notes) + "\n"


def plot(results: list[dict], settings: Settings, path: Path) -> None:
    """Accuracy and perplexity against length; each method at factor = length / trained length."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = dict(zip(METHODS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    lengths = [settings.train_len, *settings.lengths]
    for regime, style in (("training-free", "-o"), ("fine-tuned", "--s")):
        for method in METHODS:
            points = sorted(
                (r["length"], r)
                for r in results
                if r["method"] == method and r["regime"] == regime and r["factor"] == r["length"] / settings.train_len
            )
            if not points:
                continue
            for ax, metric in zip(axes, ("passkey", "ppl"), strict=True):
                ax.plot(
                    [p[0] for p in points],
                    [p[1][metric] for p in points],
                    style,
                    color=colors[method],
                    markersize=4,
                    label=LABELS[method] + (", fine-tuned" if regime == "fine-tuned" else ""),
                )
    for ax, ylabel in zip(axes, ("passkey accuracy (higher is better)", "perplexity (lower is better)"), strict=True):
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [str(length) for length in lengths])
        ax.axvline(settings.train_len, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(f"evaluation length (tokens); trained at {settings.train_len}")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylim(-0.03, 1.03)
    axes[1].legend(fontsize=7, ncol=2)
    fig.suptitle("Tiny RoPE LM beyond its training length: training-free (solid), fine-tuned 50 steps (dashed)")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    tmp.replace(path)
    plt.close(fig)


def describe(name: str, metadata: dict) -> str:
    cost = f"{name} trained in {metadata['train_seconds']:.0f} s on {metadata['threads']} thread(s)"
    return cost + (" (this run: loaded from the cache)" if metadata["loaded"] else "")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: short training, few samples, 2x and 4x")
    # One thread by default: the model is 64 channels wide, too small for intra-op threads to pay
    # off, and on a shared 2-core machine a second spinning thread slowed every step.
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default benchmarks/results, or outputs/context_extension_quick)",
    )
    parser.add_argument(
        "--lr-scheduler",
        default=FULL.lr_scheduler,
        choices=TEXT_LR_SCHEDULERS,
        help="learning-rate schedule of training and fine-tunes (docs/text.md compares two)",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("outputs/context_extension"),
        help="trained checkpoints, reused when the settings match",
    )
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be at least 1")
    torch.set_num_threads(args.threads)
    settings = dataclasses.replace(QUICK if args.quick else FULL, lr_scheduler=args.lr_scheduler)
    out = args.out or Path("outputs/context_extension_quick" if args.quick else "benchmarks/results")
    out.mkdir(parents=True, exist_ok=True)
    device = torch.device(args.device)
    language = SyntheticLanguage(**settings.language)
    trained = settings.train_len
    started = time.perf_counter()

    base_path = args.cache / f"base-{settings.key('base')}.safetensors"
    base, base_info = cached_model(base_path, lambda: train_base(settings, language, device), device)
    print(describe("base model", base_info), file=sys.stderr)

    sets = evaluation_sets(settings, language)
    results = []
    for method in METHODS:
        for length, factor, _ in columns(settings):
            base.set_rope_scaling(scaling_for(method, factor, trained))
            results.append(score(base, sets, method, "training-free", length, factor))

    tuned_seconds = []
    for method in FINETUNED:
        for length in settings.lengths:
            path = args.cache / f"finetune-{method}-{length}-{settings.key('finetune', method, length)}.safetensors"
            model, info = cached_model(
                path, partial(fine_tune, base_path, settings, language, method, length, device), device
            )
            tuned_seconds.append(info["train_seconds"])
            results.append(score(model, sets, method, "fine-tuned", length, length / trained))
    finished = time.perf_counter()

    command = "python benchmarks/context_extension.py" + (" --quick" if args.quick else "")
    notes = [
        f"Command: `{command}` ({args.device}). This run: {finished - started:.0f} s wall on "
        f"{torch.get_num_threads()} thread(s). {describe('Base model', base_info)}; the "
        f"{len(tuned_seconds)} fine-tunes took {sum(tuned_seconds):.0f} s in all when trained.",
        f"Model {settings.model}, trained {settings.train_steps} steps x {settings.batch} sequences of "
        f"{trained} tokens; fine-tunes: {settings.finetune_steps} steps at the evaluation length with the "
        f"same tokens per step. Passkey: {settings.n_passkey} sequences per length, perplexity: "
        f"{settings.n_perplexity} sequences per length. Factor s = evaluation length / {trained}, except in "
        f"the column set for {max(settings.multiples)}x.",
    ]
    (out / "context_extension.md").write_text(markdown(results, settings, notes))
    (out / "context_extension.json").write_text(
        json.dumps({"settings": dataclasses.asdict(settings), "results": results, "notes": notes}, indent=1)
    )
    plot(results, settings, out / "context_extension.png")
    print(markdown(results, settings, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
