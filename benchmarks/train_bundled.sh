#!/usr/bin/env bash
# Train the bundled models (pipelines/dit/assets/) with `axialrope train` on a 2-core CPU
# machine: the two shapes image models at once (one thread each), then the two texture models at
# once (one thread each), then the video model (two threads)
# in two stages: from the image model's weights, inflated to video (axialrope.models.axial_dit.inflate),
# on independent noise per frame; then a short run on frame-correlated noise.
# Then package them:
#   bash benchmarks/train_bundled.sh && .venv/bin/python benchmarks/package_bundled.py
#   STAGES="video correlated" bash benchmarks/train_bundled.sh   # only the video model (needs $OUT/shapes-rope)
#   STAGES=correlated bash benchmarks/train_bundled.sh         # only its last stage (needs stage 1)
#   STAGES=textures bash benchmarks/train_bundled.sh           # only the two texture models
#   STAGES=photos bash benchmarks/train_bundled.sh             # the photographs models (not bundled; needs the
#                                                              # photos extra; read by benchmarks/extrapolation.py)
#   STAGES=photos PHOTO_MODELS=rope bash benchmarks/train_bundled.sh   # only its RoPE model
# The data is the default procedural scenes, with every shape upright; upright shapes and the
# image learning rate come from benchmarks/train_upright.sh.
# Wall times are in docs/training.md, "Bundled models" (from the `trained N steps in S s` log lines).
set -euo pipefail
cd "$(dirname "$0")/.."
AXIALROPE=${AXIALROPE:-.venv/bin/axialrope}
OUT=${OUT:-outputs/bundled}
IMAGE_STEPS=${IMAGE_STEPS:-16000}
VIDEO_STEPS=${VIDEO_STEPS:-9000}
CORRELATED_STEPS=${CORRELATED_STEPS:-900}
TEXTURE_STEPS=${TEXTURE_STEPS:-12000}
PHOTO_STEPS=${PHOTO_STEPS:-3000}
PHOTO_MODELS=${PHOTO_MODELS:-"rope sincos"}
STAGES=${STAGES:-"images textures video correlated"}
RESUME=${RESUME:-}  # "--resume latest" continues the runs from their last checkpoints
mkdir -p "$OUT"
source benchmarks/bundled_recipe.sh
COMMON="--model-size mini $RECIPE --seed 0"
IMAGE="$IMAGE_DATA --learning-rate 2e-3 --max-steps $IMAGE_STEPS"
VIDEO=$VIDEO_DATA

if [[ $STAGES == *images* ]]; then
  export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
  # (a) image model, axial RoPE, 32x32 shapes
  $AXIALROPE train $COMMON $IMAGE --position-encoding rope --output-dir "$OUT/shapes-rope" $RESUME > "$OUT/shapes-rope.log" 2>&1 &
  # (b) the same with absolute sin-cos positions (the extrapolation baseline)
  $AXIALROPE train $COMMON $IMAGE --position-encoding sincos --output-dir "$OUT/shapes-sincos" $RESUME > "$OUT/shapes-sincos.log" 2>&1 &
  wait
fi
if [[ $STAGES == *textures* ]]; then
  export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
  # (e, f) the same recipe on the procedural textures (a fixed scale in pixels: a larger picture is a
  # wider window), RoPE and sin-cos; fewer steps than the shapes models, to fit an hour of CPU each
  TEXTURES="--data textures --resolution 32 --batch-size 32 --learning-rate 2e-3 --max-steps $TEXTURE_STEPS"
  $AXIALROPE train $COMMON $TEXTURES --position-encoding rope --output-dir "$OUT/textures-rope" $RESUME > "$OUT/textures-rope.log" 2>&1 &
  $AXIALROPE train $COMMON $TEXTURES --position-encoding sincos --output-dir "$OUT/textures-sincos" $RESUME > "$OUT/textures-sincos.log" 2>&1 &
  wait
fi
if [[ $STAGES == *photos* ]]; then
  export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
  # (g, h) the same recipe on crops of scikit-image's photographs (pipelines/data/photographs.py), a
  # third kind for the extrapolation benchmark's fallback; not bundled (outputs/bundled/photos-*)
  PHOTOS="--data photographs --resolution 32 --batch-size 32 --learning-rate 2e-3 --max-steps $PHOTO_STEPS"
  for encoding in $PHOTO_MODELS; do
    $AXIALROPE train $COMMON $PHOTOS --position-encoding "$encoding" --output-dir "$OUT/photos-$encoding" $RESUME \
      > "$OUT/photos-$encoding.log" 2>&1 &
  done
  wait
fi
export OMP_NUM_THREADS=2 MKL_NUM_THREADS=2  # the video stages, one run at a time, use both cores
if [[ $STAGES == *video* ]]; then
  # (c) video model, 3D axial RoPE, 8 frames of 32x32 moving shapes, from the EMA weights of (a)
  $AXIALROPE train $COMMON $VIDEO --learning-rate 5e-4 --max-steps $VIDEO_STEPS --position-encoding rope \
    --init-from "$OUT/shapes-rope/model_ema" --output-dir "$OUT/moving-shapes-rope-stage1" $RESUME \
    > "$OUT/moving-shapes-rope-stage1.log" 2>&1
fi
if [[ $STAGES == *correlated* ]]; then
  # (d) then on frame-correlated noise (80% of its variance shared by all frames), which holds a
  # shape's form over the clip; from the start on such noise, the frames came out worse (docs/training.md)
  $AXIALROPE train $COMMON $VIDEO --learning-rate 3e-4 --lr-scheduler constant --lr-warmup-steps 0 \
    --ema-decay 0.995 --max-grad-norm 0 --max-steps $CORRELATED_STEPS --frame-noise-correlation 0.8 \
    --init-from "$OUT/moving-shapes-rope-stage1/model_ema" --output-dir "$OUT/moving-shapes-rope" $RESUME \
    > "$OUT/moving-shapes-rope.log" 2>&1
fi
