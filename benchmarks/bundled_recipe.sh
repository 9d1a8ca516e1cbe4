# The flags the bundled runs share, sourced by benchmarks/train_bundled.sh and by the
# experiments built on it (train_ablations.sh, train_upright.sh), so each of those states
# only what it changes. A flag given again later on a command line wins (argparse).
RECIPE="--patch-size 4 --objective flow --class-conditional --label-dropout 0.1 --lr-warmup-steps 200 --lr-scheduler cosine --ema-decay 0.999 --checkpointing-steps 500 --checkpoints-total-limit 2 --sample-steps 30 --guidance-scale 2.0"
IMAGE_DATA="--data shapes --resolution 32 --batch-size 32"
# temporal patch 1: a 2-frame tubelet would mix two frames' independent noise into one token,
# which the inflated image weights cannot separate (benchmarks/video_init.py)
VIDEO_DATA="--data moving_shapes --resolution 8x32x32 --temporal-patch-size 1 --batch-size 8"
