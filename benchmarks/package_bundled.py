"""Turn the runs of benchmarks/train_bundled.sh into the bundled pipelines under pipelines/dit/assets/.

    .venv/bin/python benchmarks/package_bundled.py                # EMA weights (default)
    .venv/bin/python benchmarks/package_bundled.py --weights model # the raw weights instead
    .venv/bin/python benchmarks/package_bundled.py --runs outputs/candidate --models shapes-rope \
        --to outputs/candidate/pipelines                     # a candidate, beside the bundled ones

Each run's model (model_ema/ or model/) becomes an AxialDiTPipeline (flow-matching scheduler, the run's
class names, from its pipeline-config/) saved with safetensors to pipelines/dit/assets/<run name>/
(or --to). A `default_extrapolation` already recorded there by benchmarks/extrapolation.py is kept.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from axialrope.models import DiT
from axialrope.pipelines.dit.bundled import BUNDLED_MODELS, assets_folder
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="outputs/bundled", help="the folder train_bundled.sh wrote")
    parser.add_argument("--weights", default="model_ema", choices=["model_ema", "model"])
    parser.add_argument(
        "--models",
        nargs="+",
        default=list(BUNDLED_MODELS),
        choices=list(BUNDLED_MODELS),
        help="which runs to package (default: all)",
    )
    parser.add_argument("--to", type=Path, default=assets_folder(), help="where the pipelines go")
    args = parser.parse_args()
    for name in args.models:
        run = Path(args.runs) / name
        model = DiT.from_pretrained(run / args.weights)
        target = args.to / name
        recorded = target / "model_index.json"
        shipped = json.loads(recorded.read_text()) if recorded.exists() else {}
        # runs from before pipeline-config/ existed: the class names the shipped pipeline has
        config = run / "pipeline-config" / "model_index.json"
        class_names = json.loads(config.read_text())["class_names"] if config.exists() else shipped["class_names"]
        default = shipped.get("default_extrapolation")
        shutil.rmtree(target, ignore_errors=True)
        pipe = AxialDiTPipeline.from_model(model, "flow", class_names=class_names)
        if default:
            pipe.set_default_extrapolation(default)
        pipe.save_pretrained(target)
        size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
        print(
            f"{name}: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, "
            f"{size / 1e6:.1f} MB -> {target}"
        )


if __name__ == "__main__":
    main()
