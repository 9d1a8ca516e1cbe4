#!/usr/bin/env bash
# The tables of docs/checks.md: every property on every implementation,
# first at the default large coordinate (65536), then at 1024 (the size of real video grids).
set -euo pipefail
axialrope check --markdown
echo
axialrope check --impl flux cogvideox wan hunyuanvideo rotary-embedding-torch --large 1024 --markdown
