#!/usr/bin/env bash
# The experiment that set the bundled image recipe: upright shapes at lr 2e-3. Until then the
# bundled models were trained on shapes at any rotation (--scene-rotation 1) at lr 1e-3, and
# drew squares, pentagons and crosses worst (benchmarks/shape_recognition.py): the shapes whose
# corners or arms may point anywhere. Two runs of the image recipe (benchmarks/train_bundled.sh,
# 16000 steps, about an hour each, two at a time on the 2 cores, one thread each) on upright
# scenes (--scene-rotation 0, every shape at angle 0, now the default), at the old learning rate
# and at twice it; then scored against the model shipped before, taken from git history.
# Results: docs/training.md, "Bundled models".
#   bash benchmarks/train_upright.sh
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
PYTHON=${PYTHON:-.venv/bin/python}
OUT=${OUT:-outputs/upright}
RESUME=${RESUME:-}  # "--resume latest" continues the runs from their last checkpoints
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source benchmarks/bundled_recipe.sh
IMAGE="--model-size mini $RECIPE --seed 0 $IMAGE_DATA --max-steps 16000 --position-encoding rope --scene-rotation 0"

$AXIALROPE train $IMAGE --learning-rate 1e-3 --output-dir "$OUT/shapes-rope" $RESUME > "$OUT/shapes-rope.log" 2>&1 &
$AXIALROPE train $IMAGE --learning-rate 2e-3 --output-dir "$OUT/shapes-rope-lr2e-3" $RESUME > "$OUT/shapes-rope-lr2e-3.log" 2>&1 &
wait

export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2
# the image model shipped before (any rotation, lr 1e-3), scored on the same 64 samples per class
PREVIOUS_COMMIT=e967f3a
mkdir -p "$OUT/previous" && git archive $PREVIOUS_COMMIT pipelines/assets/shapes-rope | tar -x -C "$OUT/previous"
$PYTHON benchmarks/shape_recognition.py --per-class 64 --scene-rotation 0 --out "$OUT" --name image_recognition \
  --models "$OUT/previous/pipelines/assets/shapes-rope" "$OUT/shapes-rope/model_ema" "$OUT/shapes-rope-lr2e-3/model_ema"
grep -h "^trained" "$OUT"/*.log
