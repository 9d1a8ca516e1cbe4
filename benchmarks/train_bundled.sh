#!/usr/bin/env bash
# Train the three bundled models (pipelines/assets/) with `axialrope train`, concurrently, one thread each.
# Measured on a 2-core CPU VM shared with other jobs: about 30-40 minutes of wall time for all three.
#   bash benchmarks/train_bundled.sh          # writes outputs/bundled/{shapes-rope,shapes-sincos,moving-shapes-rope}
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
OUT=${OUT:-outputs/bundled}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--model-size mini --patch-size 4 --objective flow --class-conditional --label-dropout 0.1 --learning-rate 1e-3 --lr-warmup-steps 100 --lr-scheduler cosine --ema-decay 0.999 --checkpointing-steps 250 --sample-steps 30 --guidance-scale 2.0 --seed 0"
# (a) image model, axial RoPE, 32x32 shapes
$AXIALROPE train $COMMON --data shapes --resolution 32 --batch-size 16 --max-steps 2000 \
    --position-encoding rope --output-dir "$OUT/shapes-rope" > "$OUT/shapes-rope.log" 2>&1 &
# (b) the same with absolute sin-cos positions (the extrapolation baseline)
$AXIALROPE train $COMMON --data shapes --resolution 32 --batch-size 16 --max-steps 2000 \
    --position-encoding sincos --output-dir "$OUT/shapes-sincos" > "$OUT/shapes-sincos.log" 2>&1 &
# (c) video model, axial RoPE, 8 frames of 32x32 moving shapes, temporal patch 2
$AXIALROPE train $COMMON --data moving_shapes --resolution 8x32x32 --temporal-patch-size 2 --batch-size 8 \
    --max-steps 1000 --position-encoding rope --output-dir "$OUT/moving-shapes-rope" > "$OUT/moving-shapes-rope.log" 2>&1 &
wait
