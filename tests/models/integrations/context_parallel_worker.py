"""One rank of test_context_parallel.py: tiny models under diffusers' own context parallelism on the CPU.

    python context_parallel_worker.py RANK WORLD STORE OUT SPEC_JSON

SPEC_JSON: {"family": [grid, timestep, [method, ...]], ...}. Each model gets the method, then
`enable_parallelism(ContextParallelConfig(ulysses_degree=WORLD))`; rank 0 saves the outputs to OUT.
The CPU shim: diffusers picks the device as rank % torch.accelerator.device_count(), which is 0
without an accelerator, so it is made to report 1 (every rank on "cpu"); gloo carries the
all-to-all of Ulysses. Ring attention needs an attention backend that returns the log-sum-exp,
which diffusers' CPU backends do not: it is not tried here.
"""

import importlib.util
import json
import sys
from pathlib import Path

import torch


def main() -> None:
    rank, world, store, out, spec = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    torch.set_num_threads(1)
    torch.accelerator.device_count = lambda: 1  # the CPU shim (see above)
    torch.distributed.init_process_group("gloo", rank=rank, world_size=world, init_method=f"file://{store}")
    loaded = importlib.util.spec_from_file_location("tiny_families", Path(__file__).with_name("tiny_families.py"))
    tiny_families = sys.modules["tiny_families"] = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(tiny_families)

    from diffusers import ContextParallelConfig
    from diffusers.utils import logging

    from axialrope import Extrapolation
    from axialrope.models import apply_extrapolation

    logging.set_verbosity_error()
    results = {}
    for name, (grid, timestep, methods) in json.loads(spec).items():
        small = tiny_families.TINY[name]
        for method in methods:
            model = small.make()
            base, _, entropy = method.partition("+")
            apply_extrapolation(model, Extrapolation(base, entropy_scaling=bool(entropy)), trained_grid=small.trained)
            model.enable_parallelism(config=ContextParallelConfig(ulysses_degree=world))
            results[f"{name} {method}"] = tiny_families.run(model, small, tuple(grid), timestep)
    if rank == 0:
        torch.save(results, out)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
