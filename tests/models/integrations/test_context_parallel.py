"""Under diffusers' own context parallelism (Ulysses over two CPU processes, gloo) every method gives
the single-process output: the per-axis scales, the token count of entropy scaling and RIFLEx's
length come from the whole grid, which each model's forward pre-hook sees before the split (SEGA's spectrum
from the whole latent too). Adding a family: an entry in CP_CASES (a grid whose tokens and heads split evenly
over two ranks)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation

METHODS = ["none", "pi", "yarn", "dype-yarn", "ntk+entropy", "sega"]  # sega: the spectrum of the whole latent
CP_CASES = {  # family: (token grid beyond its tiny trained grid, timestep, methods)
    "flux": ((8, 8), 0.7, [*METHODS, "spa"]),  # spa: every variant's attention gathers the whole sequence
    "wan": ((8, 8, 8), 700.0, [*METHODS, "riflex", "spa"]),  # spa: diffusers shards each variant's table alike
    "flux2": ((8, 8), 0.7, METHODS),  # the rope called once per ids argument, each (1, seq, 4) split on seq
    "chronoedit": ((2, 8, 8), 700.0, METHODS),  # a two-frame edit (times 0 and 3) at twice its trained size
    # QwenEmbedLayer3DRope's two tables split on their sequence (spa: each variant's alike)
    "qwen-image-layered": ((8, 8), 0.7, [*METHODS, "spa"]),
}
WORKER = Path(__file__).with_name("context_parallel_worker.py")


@pytest.mark.slow
def test_ulysses_over_two_cpu_processes_gives_the_single_process_output(tmp_path, tiny):
    out, store = tmp_path / "outputs.pt", tmp_path / "store"
    spec = json.dumps(CP_CASES)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ranks = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), "2", str(store), str(out), spec],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in range(2)
    ]
    logs = [rank.communicate(timeout=600)[0] for rank in ranks]
    assert all(rank.returncode == 0 for rank in ranks), logs[0][-3000:] + logs[1][-3000:]
    parallel = torch.load(out)
    for name, (grid, timestep, methods) in CP_CASES.items():
        small = tiny.TINY[name]
        for method in methods:
            model = small.make()
            base, _, entropy = method.partition("+")
            apply_extrapolation(model, Extrapolation(base, entropy_scaling=bool(entropy)), trained_grid=small.trained)
            single = tiny.run(model, small, tuple(grid), timestep)
            torch.testing.assert_close(
                parallel[f"{name} {method}"],
                single,
                rtol=0,
                atol=1e-5,
                msg=lambda m, key=f"{name} {method}": f"{key}: {m}",
            )
