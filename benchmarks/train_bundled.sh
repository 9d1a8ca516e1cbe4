#!/usr/bin/env bash
# Train the three bundled models (pipelines/assets/) with `axialrope train`, all three at once,
# one thread each, on a 2-core CPU machine. Then package them:
#   bash benchmarks/train_bundled.sh && .venv/bin/python benchmarks/package_bundled.py
# Wall times are in the README, "Bundled models" (from the `trained N steps in S s` log lines).
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
OUT=${OUT:-outputs/bundled}
IMAGE_STEPS=${IMAGE_STEPS:-16000}
VIDEO_STEPS=${VIDEO_STEPS:-16000}
RESUME=${RESUME:-}  # "--resume latest" continues the runs from their last checkpoints
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--model-size mini --patch-size 4 --objective flow --class-conditional --label-dropout 0.1 --learning-rate 1e-3 --lr-warmup-steps 200 --lr-scheduler cosine --ema-decay 0.999 --checkpointing-steps 500 --checkpoints-total-limit 2 --sample-steps 30 --guidance-scale 2.0 --seed 0"
IMAGE="--data shapes --resolution 32 --batch-size 32 --max-steps $IMAGE_STEPS"
VIDEO="--data moving_shapes --resolution 8x32x32 --temporal-patch-size 2 --batch-size 8 --max-steps $VIDEO_STEPS"

# (a) image model, axial RoPE, 32x32 shapes
$AXIALROPE train $COMMON $IMAGE --position-encoding rope --output-dir "$OUT/shapes-rope" $RESUME > "$OUT/shapes-rope.log" 2>&1 &
# (b) the same with absolute sin-cos positions (the extrapolation baseline)
$AXIALROPE train $COMMON $IMAGE --position-encoding sincos --output-dir "$OUT/shapes-sincos" $RESUME > "$OUT/shapes-sincos.log" 2>&1 &
# (c) video model, axial RoPE, 8 frames of 32x32 moving shapes, temporal patch 2
$AXIALROPE train $COMMON $VIDEO --position-encoding rope --output-dir "$OUT/moving-shapes-rope" $RESUME > "$OUT/moving-shapes-rope.log" 2>&1 &
wait
