#!/usr/bin/env bash
# What more CPU time buys the bundled models, and whether the video model lacks temporal
# RoPE resolution: four runs of about 40 min, two at a time on the 2 cores (one thread each),
# each started from a stage of benchmarks/train_bundled.sh (run that first), then scored by
# benchmarks/shape_recognition.py and benchmarks/video_motion.py. Results: docs/training.md, "Bundled models".
# Those results were measured on the bundled runs before they moved to upright shapes
# (benchmarks/train_upright.sh); at commit e967f3a, train_bundled.sh and then this script
# reproduce them. Run now, it asks the same questions of the current runs.
#   bash benchmarks/train_ablations.sh
# (a) the image model trained on: 10000 more steps of the same `mini`
# (b) the image model grown to `mini-deep` (8 blocks, the 4 trained ones first): 5000 steps,
#     the same wall time as (a)
# (c) the first video stage trained on for 3600 steps
# (d) the same with RoPE base 30 on the time axis (1, 0.43, 0.18, 0.08 rad per frame for the
#     four temporal pairs, against 1, 0.1, 0.01, 0.001 with base 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
PYTHON=${PYTHON:-.venv/bin/python}
BUNDLED=${BUNDLED:-outputs/bundled}
OUT=${OUT:-outputs/ablations}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
source benchmarks/bundled_recipe.sh
COMMON="$RECIPE --seed 1 --position-encoding rope"
IMAGE="$IMAGE_DATA --learning-rate 5e-4 --init-from $BUNDLED/shapes-rope/model_ema"
VIDEO="--model-size mini $VIDEO_DATA --learning-rate 3e-4 --max-steps 3600 --init-from $BUNDLED/moving-shapes-rope-stage1/model_ema"

$AXIALROPE train $COMMON $IMAGE --model-size mini --max-steps 10000 --output-dir "$OUT/image-more" > "$OUT/image-more.log" 2>&1 &
$AXIALROPE train $COMMON $IMAGE --model-size mini-deep --max-steps 5000 --output-dir "$OUT/image-deeper" > "$OUT/image-deeper.log" 2>&1 &
wait
$AXIALROPE train $COMMON $VIDEO --output-dir "$OUT/video-more" > "$OUT/video-more.log" 2>&1 &
$AXIALROPE train $COMMON $VIDEO --rope-theta 30 10000 10000 --output-dir "$OUT/video-time-base-30" > "$OUT/video-time-base-30.log" 2>&1 &
wait

export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2
$PYTHON benchmarks/shape_recognition.py --per-class 64 --out "$OUT" --name image_recognition \
  --models shapes-rope "$OUT/image-more/model_ema" "$OUT/image-deeper/model_ema"
$PYTHON benchmarks/shape_recognition.py --out "$OUT" --name video_recognition \
  --models "$BUNDLED/moving-shapes-rope-stage1/model_ema" "$OUT/video-more/model_ema" "$OUT/video-time-base-30/model_ema"
for seed in 0 1; do
  $PYTHON benchmarks/video_motion.py --seed "$seed" --out "$OUT/video-motion-seed$seed" \
    --models "$BUNDLED/moving-shapes-rope-stage1/model_ema" "$OUT/video-more/model_ema" "$OUT/video-time-base-30/model_ema"
done
grep -h "^trained" "$OUT"/*.log
