#!/usr/bin/env bash
# Train the three bundled models (pipelines/assets/) with `axialrope train`, as they were trained:
# phase 1 runs all three concurrently, one thread each; phase 2 resumes each from its last checkpoint
# with a longer cosine schedule (more steps fitted in the time left). Then package them:
#   bash benchmarks/train_bundled.sh && .venv/bin/python benchmarks/package_bundled.py
# Wall times on the 2-core shared CPU VM (load 4-9 from other jobs) are in the README, "Bundled models".
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
OUT=${OUT:-outputs/bundled}
mkdir -p "$OUT"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--model-size mini --patch-size 4 --objective flow --class-conditional --label-dropout 0.1 --learning-rate 1e-3 --lr-warmup-steps 100 --lr-scheduler cosine --ema-decay 0.999 --checkpointing-steps 250 --sample-steps 30 --guidance-scale 2.0 --seed 0"
IMAGE="--data shapes --resolution 32 --batch-size 16"
VIDEO="--data moving_shapes --resolution 8x32x32 --temporal-patch-size 2 --batch-size 8 --position-encoding rope"

for phase in 1 2; do
    if [ $phase = 1 ]; then image_steps=2000; video_steps=1000; resume=""; else image_steps=3000; video_steps=1500; resume="--resume latest"; fi
    # (a) image model, axial RoPE, 32x32 shapes
    $AXIALROPE train $COMMON $IMAGE --position-encoding rope --max-steps $image_steps $resume \
        --output-dir "$OUT/shapes-rope" > "$OUT/shapes-rope.phase$phase.log" 2>&1 &
    # (b) the same with absolute sin-cos positions (the extrapolation baseline)
    $AXIALROPE train $COMMON $IMAGE --position-encoding sincos --max-steps $image_steps $resume \
        --output-dir "$OUT/shapes-sincos" > "$OUT/shapes-sincos.phase$phase.log" 2>&1 &
    # (c) video model, axial RoPE, 8 frames of 32x32 moving shapes, temporal patch 2
    $AXIALROPE train $COMMON $VIDEO --max-steps $video_steps $resume \
        --output-dir "$OUT/moving-shapes-rope" > "$OUT/moving-shapes-rope.phase$phase.log" 2>&1 &
    wait
done
