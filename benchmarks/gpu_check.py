"""The parts of benchmarks/gpu_check.sh: what a CUDA machine must show of the Triton kernels.

    python benchmarks/gpu_check.py tests        # the CUDA-marked tests (pytest -m cuda)
    python benchmarks/gpu_check.py parity       # Triton vs eager: apply and the fused op, forward and backward
    python benchmarks/gpu_check.py bandwidth    # achieved bandwidth against the device's peak
    python benchmarks/gpu_check.py sample       # the bundled model at 2x its size in bfloat16
    python benchmarks/gpu_check.py calibrate    # `axialrope calibrate` of a tiny Flux pipeline, bfloat16, resumed

Each part prints its summary as its last line and exits 0 (passed), 1 (failed) or 77 (skipped:
no CUDA device; the part still runs as much of its logic as it can without one); gpu_check.sh
puts PASS, FAIL or SKIP in front.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

SKIP = 77
ROOT = Path(__file__).resolve().parent.parent

# Peak memory bandwidth in bytes/s by device-name fragment, most specific first (vendors' data sheets)
PEAK_BANDWIDTH = (
    ("H200", 4.8e12),
    ("H100 PCIe", 2.0e12),
    ("H100 NVL", 3.9e12),
    ("H100", 3.35e12),
    ("GH200", 4.0e12),
    ("A100-SXM4-80GB", 2.039e12),
    ("A100 80GB PCIe", 1.935e12),
    ("A100", 1.555e12),
    ("L40S", 0.864e12),
    ("L4", 0.3e12),
    ("A10", 0.6e12),
    ("RTX 4090", 1.008e12),
)


def no_cuda(part: str) -> int:
    print(f"{part}: no CUDA device (torch {torch.__version__})")
    return SKIP


# -- tests ------------------------------------------------------------------------------------


def part_tests() -> int:
    """pytest on the CUDA-marked tests; without CUDA they collect and skip (checked, then SKIP)."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    lines = [line for line in result.stdout.strip().splitlines() if line.strip()]
    summary = lines[-1] if lines else result.stderr.strip()[-200:]
    if result.returncode != 0:
        print(result.stdout[-4000:], file=sys.stderr)
        print(f"tests: {summary}")
        return 1
    if not torch.cuda.is_available():
        print(f"tests: no CUDA device ({summary})")
        return SKIP
    print(f"tests: {summary}")
    return 0


# -- parity -----------------------------------------------------------------------------------


def _ulps(got: torch.Tensor, expected: torch.Tensor) -> float:
    """Largest difference in units of the dtype's eps times the reference's largest magnitude."""
    scale = expected.double().abs().max().item() + 1e-30
    return (got.double() - expected.double()).abs().max().item() / (torch.finfo(got.dtype).eps * scale)


# (q shape, k shape, table shape, norm across heads, q and k as views of (b, s, h, d) memory)
PARITY_CASES = {
    "heads first": ((2, 8, 333, 64), (2, 8, 333, 64), (333, 32), False, False),
    "grouped-query, partial rotary": ((2, 8, 100, 80), (2, 2, 100, 80), (100, 24), False, False),
    "projection views": ((2, 6, 257, 128), (2, 6, 257, 128), (257, 64), False, True),
    "across heads (b, s, h, d)": ((2, 257, 6, 128), (2, 257, 6, 128), (257, 1, 64), True, False),
}


def _parity_outputs(q, k, cos, sin, qw, kw, layout, across, backend) -> list[torch.Tensor]:
    """Every result the two backends must agree on, computed with one of them."""
    from axialrope import apply_rotary_, apply_rotary_qk, rms_norm_rotary_qk, rotary_backend

    with rotary_backend(backend):
        leaves = [t.detach().float().requires_grad_() for t in (q, k, qw, kw)]
        rotated = apply_rotary_qk(q, k, cos, sin, layout)
        in_place = apply_rotary_(q.clone(), cos, sin, layout)
        (rotation_grad,) = torch.autograd.grad(
            apply_rotary_qk(leaves[0], leaves[1], cos, sin, layout)[0].sum(), leaves[0]
        )
        fused = rms_norm_rotary_qk(q, k, cos, sin, qw.to(q.dtype), kw.to(q.dtype), 1e-6, layout, across_heads=across)
        out = rms_norm_rotary_qk(*leaves[:2], cos, sin, *leaves[2:], 1e-6, layout, across_heads=across)
        fused_grads = torch.autograd.grad(sum(o.square().sum() for o in out), leaves)
    return [*rotated, in_place, rotation_grad, *fused, *fused_grads]


def part_parity() -> int:
    """Triton against the eager kernels on the same CUDA tensors: apply (out of place, in place,
    backward) and the fused op (forward; backward for q, k and both weights), fp32/bf16/fp16,
    both layouts, partial rotary, grouped-query k, projection views, a norm across heads.
    Without CUDA the same comparison runs on the CPU, eager against the composite formula."""
    device, (fast, reference) = (
        ("cuda", ("triton", "eager")) if torch.cuda.is_available() else ("cpu", ("eager", "composite"))
    )
    worst, checks, failures = {}, 0, []
    g = torch.Generator().manual_seed(0)
    for name, (q_shape, k_shape, table_shape, across, seq_major) in PARITY_CASES.items():
        angles = torch.randn(*table_shape, generator=g, dtype=torch.float64) * 50
        cos, sin = angles.cos().float().to(device), angles.sin().float().to(device)
        q_row = q_shape[-2] * q_shape[-1] if across else q_shape[-1]
        k_row = k_shape[-2] * k_shape[-1] if across else k_shape[-1]
        qw = (1 + 0.1 * torch.randn(q_row, generator=g)).to(device)
        kw = (1 + 0.1 * torch.randn(k_row, generator=g)).to(device)
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            q = torch.randn(q_shape, generator=g).to(device, dtype)
            k = torch.randn(k_shape, generator=g).to(device, dtype)
            if seq_major:
                q, k = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k))
            for layout in ("half", "interleaved"):
                got = _parity_outputs(q, k, cos, sin, qw, kw, layout, across, fast)
                expected = _parity_outputs(q, k, cos, sin, qw, kw, layout, across, reference)
                for a, b in zip(got, expected, strict=True):
                    checks += 1
                    # half precision: both round one float32 result (FMA contraction may differ by
                    # an ulp); float32 results include gradients summed over rows in another order
                    limit = 4.0 if a.dtype in (torch.bfloat16, torch.float16) else 512.0
                    ulps = _ulps(a, b)
                    worst[a.dtype] = max(worst.get(a.dtype, 0.0), ulps)
                    if not torch.isfinite(a).all() or ulps > limit:
                        failures.append(f"{name}, {str(dtype)[6:]}, {layout}: {ulps:.1f} ulps of {str(a.dtype)[6:]}")
    where = "Triton vs eager on CUDA" if device == "cuda" else "eager vs composite on the CPU"
    worst_text = ", ".join(f"{str(d)[6:]} {u:.1f}" for d, u in worst.items())
    summary = f"{checks} comparisons, {where}; worst ulps: {worst_text}"
    if failures:
        print("\n".join(failures[:20]), file=sys.stderr)
        print(f"parity: {len(failures)} failed of {summary}")
        return 1
    if device == "cpu":
        print(f"parity: no CUDA device; {summary}")
        return SKIP
    print(f"parity: {summary}")
    return 0


# -- bandwidth --------------------------------------------------------------------------------


def peak_bandwidth(name: str) -> float | None:
    for fragment, peak in PEAK_BANDWIDTH:
        if fragment in name:
            return peak
    return None


def _time_cuda(fn, repeats: int = 30) -> float:
    """Median seconds of fn() on the current stream (CUDA events), after warm-up."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


# (batch, heads, token grid, head_dim): a Flux-sized self-attention, 24 heads of 128 channels
# over a 128 x 128 token grid (a 2048 px image), large enough to stream from memory
BANDWIDTH_SHAPE = (2, 24, (128, 128), 128)


def part_bandwidth() -> int:
    """Bytes each kernel must move (read q and k, write both; the table once) over its median time."""
    if not torch.cuda.is_available():
        return no_cuda("bandwidth")
    from axialrope import AxialRotaryEmbedding, apply_rotary_qk, rms_norm_rotary_qk, rotary_backend

    name = torch.cuda.get_device_name()
    peak = peak_bandwidth(name)
    batch, heads, grid, dim = BANDWIDTH_SHAPE
    cos, sin = AxialRotaryEmbedding((dim // 2, dim // 2)).for_grid(*grid, device="cuda")
    seq = grid[0] * grid[1]
    parts = []
    for dtype in (torch.bfloat16, torch.float32):
        q = torch.randn(batch, heads, seq, dim, device="cuda", dtype=dtype)
        k = torch.randn_like(q)
        qw, kw = torch.ones(dim, device="cuda"), torch.ones(dim, device="cuda")
        moved = 2 * 2 * q.numel() * q.element_size() + 2 * cos.numel() * cos.element_size()
        with rotary_backend("triton"):
            timings = {
                "copy": _time_cuda(lambda q=q, k=k: (q.clone(), k.clone())),
                "apply": _time_cuda(lambda q=q, k=k: apply_rotary_qk(q, k, cos, sin)),
                "fused": _time_cuda(lambda q=q, k=k, qw=qw, kw=kw: rms_norm_rotary_qk(q, k, cos, sin, qw, kw)),
            }
        for kernel, seconds in timings.items():
            rate = moved / seconds
            share = f" = {rate / peak:.2f} of peak" if peak else f" = {rate / (moved / timings['copy']):.2f} of copy"
            parts.append(f"{kernel} {str(dtype)[6:]} {rate / 1e12:.2f} TB/s{share}")
    peak_text = f"peak {peak / 1e12:.2f} TB/s" if peak else "peak unknown: shares of the measured copy"
    print(f"bandwidth: {name} ({peak_text}), q and k {batch}x{heads}x{seq}x{dim}: " + "; ".join(parts))
    return 0


# -- sample -----------------------------------------------------------------------------------


def part_sample(out: str) -> int:
    """The bundled image model at 64x64 (2x its trained size) in bfloat16 on CUDA, against float32 on CPU."""
    from axialrope.pipelines.dit.bundled import load_pipeline

    def images(device: str):
        pipe = load_pipeline(None, device)
        pipe.set_progress_bar_config(disable=True)
        start = time.perf_counter()
        result = pipe(
            class_labels=list(range(pipe.transformer.config.num_classes)),
            height=64,
            width=64,
            num_inference_steps=20,
            guidance_scale=2.0,
            generator=torch.Generator().manual_seed(0),
            output_type="pt",
        ).images
        return result, time.perf_counter() - start, pipe.transformer.dtype

    if not torch.cuda.is_available():
        return no_cuda("sample")
    gpu, seconds, dtype = images("cuda")
    cpu, _, _ = images("cpu")
    difference = (gpu.float() - cpu.float()).abs().mean().item()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    from torchvision.utils import save_image

    save_image(gpu.float(), out, nrow=len(gpu))
    ok = torch.isfinite(gpu).all().item() and gpu.std().item() > 0.02 and difference < 0.05
    verdict = "" if ok else "not finite, flat or too far from float32: "
    print(
        f"sample: {verdict}bundled model at 64x64 in {str(dtype)[6:]} on {torch.cuda.get_device_name()}: "
        f"{len(gpu)} images, 20 steps in {seconds:.1f} s; mean |cuda {str(dtype)[6:]} - cpu float32| = "
        f"{difference:.4f} of the pixel range; wrote {out}"
    )
    return 0 if ok else 1


# -- calibrate --------------------------------------------------------------------------------


def part_calibrate(out: str) -> int:
    """`axialrope calibrate` of a tiny random Flux pipeline (built as the tests build it) on CUDA in bfloat16 at
    2x and a non-square size; then the same command again, which must find every cell finished."""
    if not torch.cuda.is_available():
        return no_cuda("calibrate")
    import json
    import tempfile
    from contextlib import redirect_stdout
    from io import StringIO

    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import save_tiny_flux  # the tests' tiny pipeline: tokenizers written here, nothing downloaded

    from axialrope.pipelines.cli import main as cli

    with tempfile.TemporaryDirectory() as folder:
        model = save_tiny_flux(Path(folder) / "flux")
        args = ["calibrate", "--model", str(model), "--prompt", "a red cube", "--prompt", "a cat", "--sizes",
                "32x32", "16x32", "--trained-grid", "8", "8", "--steps", "2", "--methods", "none", "pi", "yarn",
                "dype-yarn+entropy", "--device", "cuda", "--dtype", "bfloat16", "--out", out]  # fmt: skip
        start = time.perf_counter()
        first = cli(args)
        seconds = time.perf_counter() - start
        again = StringIO()
        with redirect_stdout(again):
            second = cli(args)
    record = json.loads((Path(out) / "calibration.json").read_text()) if first == 0 else {}
    values = [v for target in record.get("targets", []) for vs in target["values"].values() for v in vs]
    ok = first == 0 and second == 0 and values and all(v == v and abs(v) != float("inf") for v in values)
    resumed = "finished cells" in again.getvalue()  # "continuing: N finished cells ... are kept"
    ok = bool(ok and resumed and record["settings"]["dtype"] == "bfloat16")
    verdict = "" if ok else "failed, not finite, not bfloat16 or not resumed: "
    bands = [f"{b.get('aspect', 1):g}: {b['method']}" for b in record.get("default_extrapolation", [])]
    print(
        f"calibrate: {verdict}tiny Flux on {torch.cuda.get_device_name()} in bfloat16, {len(values)} cell values in "
        f"{seconds:.1f} s, bands {', '.join(bands)}; the rerun found every cell finished; wrote {out}"
    )
    return 0 if ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("tests", "parity", "bandwidth", "sample", "calibrate"))
    parser.add_argument(
        "--out",
        default=None,
        help="the sample part's picture, the calibrate part's folder (default: outputs/gpu_check/)",
    )
    args = parser.parse_args(argv)
    if args.part == "sample":
        return part_sample(args.out or "outputs/gpu_check/sample_64x64_bf16.png")
    if args.part == "calibrate":
        return part_calibrate(args.out or "outputs/gpu_check/calibration")
    return {"tests": part_tests, "parity": part_parity, "bandwidth": part_bandwidth}[args.part]()


if __name__ == "__main__":
    sys.exit(main())
