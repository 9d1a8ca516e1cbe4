#!/usr/bin/env bash
# Does the random rotation of the shapes hold the image model back? Squares, pentagons and
# crosses are the classes it draws worst (benchmarks/shape_recognition.py), and they are the
# ones whose corners or arms may point anywhere. Two runs of the bundled image recipe
# (benchmarks/train_bundled.sh, 16000 steps, about an hour each, two at a time on the 2
# cores, one thread each) on upright scenes (--scene-rotation 0: every shape at angle 0),
# at the bundled learning rate and at twice it; then scored against the bundled model.
# Results: README, "Bundled models".
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
# the bundled model is scored on the same 64 samples per class; its real renders row is in
# benchmarks/results/shape_recognition.md (random rotation), this one is upright
$PYTHON benchmarks/shape_recognition.py --per-class 64 --scene-rotation 0 --out "$OUT" --name image_recognition \
  --models shapes-rope "$OUT/shapes-rope/model_ema" "$OUT/shapes-rope-lr2e-3/model_ema"
grep -h "^trained" "$OUT"/*.log
