#!/usr/bin/env bash
# One command for a CUDA machine, at most about 5 minutes: what the Triton kernels must show there.
#
#   bash benchmarks/gpu_check.sh            # from the repository root, in its virtual environment
#   PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh
#
# Parts (benchmarks/gpu_check.py), one summary line each:
#   tests      the CUDA-marked tests (pytest -m cuda)
#   parity     Triton vs eager for apply_rotary* and rms_norm_rotary_qk, forward and backward,
#              float32 / bfloat16 / float16, both layouts
#   bandwidth  achieved bandwidth of copy, apply and the fused op as a share of the device's peak
#   sample     the bundled image model sampled at 64x64 (2x) in bfloat16, against float32 on the CPU
#   calibrate  axialrope calibrate of a tiny Flux pipeline in bfloat16, then the same command resumed
# Exits 1 if a part fails (or runs past its time limit); a part without a CUDA device says SKIP.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
failed=0
skipped=0

run_part() {  # run_part NAME SECONDS: one line PASS/SKIP/FAIL with the part's own summary
    local name=$1 limit=$2 output code
    output=$(timeout "$limit" "$PYTHON" benchmarks/gpu_check.py "$name" 2>&1)
    code=$?
    local summary
    summary=$(printf '%s\n' "$output" | grep -v '^\s*$' | tail -n 1)
    case $code in
        0) echo "PASS $summary" ;;
        77) echo "SKIP $summary"; skipped=$((skipped + 1)) ;;
        124) echo "FAIL $name: ran past ${limit} s"; failed=$((failed + 1)) ;;
        *) echo "FAIL $summary (exit $code)"; printf '%s\n' "$output" | tail -n 25 >&2; failed=$((failed + 1)) ;;
    esac
}

started=$(date +%s)
run_part tests 100
run_part parity 60
run_part bandwidth 60
run_part sample 80
run_part calibrate 120
elapsed=$(( $(date +%s) - started ))
if [ "$failed" -gt 0 ]; then
    echo "gpu_check: $failed part(s) failed in ${elapsed} s"
    exit 1
fi
if [ "$skipped" -eq 5 ]; then
    echo "gpu_check: no CUDA device, nothing checked on a GPU (${elapsed} s)"
else
    echo "gpu_check: all parts passed in ${elapsed} s"
fi
