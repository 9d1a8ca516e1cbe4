"""The rope's settings come from the model's config, not from its buffers, and positions never need
float64 on the model's device (MPS has none): angles are made on the CPU, float32 tables moved."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from axialrope.models import apply_extrapolation


def test_a_wan_cast_to_bfloat16_is_extrapolated_as_its_float32_self(tiny):
    model, cast = tiny.make_wan(), tiny.make_wan().to(torch.bfloat16)  # the cast changes the rope's buffers
    grid = (6, 8, 8)
    latent = torch.empty(1, 4, grid[0], 2 * grid[1], 2 * grid[2])
    tables = []
    for each in (model, cast):
        handle = apply_extrapolation(each, "pi", trained_grid=(3, 4, 4))
        tables.append(each.rope(latent.to(next(each.parameters()).dtype)))
        handle.remove()
    assert all(torch.equal(a, b) for a, b in zip(*tables, strict=True))


class Float64On(TorchDispatchMode):
    """Records every op that makes a float64 tensor on `device`."""

    def __init__(self, device: str):
        super().__init__()
        self.device, self.seen = device, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if torch.is_tensor(leaf) and leaf.dtype == torch.float64 and leaf.device.type == self.device:
                self.seen.append(str(func))
        return out


def _rope_inputs(name, tiny, grid):
    t, h, w = grid if len(grid) == 3 else (1, *grid)
    return {
        "wan": lambda m: m.rope(torch.empty(1, 4, t, 2 * h, 2 * w, device="meta")),
        "hunyuan-video": lambda m: m.rope(torch.empty(1, 4, t, h, w, device="meta")),
        "ltx-video": lambda m: m.rope(torch.empty(1, 1, 4, device="meta"), t, h, w, tiny.LTX_SCALE),
        "qwen-image": lambda m: m.pos_embed([[(1, h, w)]], device=torch.device("meta"), max_txt_seq_len=5),
        "cogvideox": lambda m: m._axialrope_extrapolation.rope(
            torch.empty(1, t, 4, 2 * h, 2 * w, device="meta"),
            tuple(x.to("meta") for x in tiny.cogvideox_pipeline_table(m, grid)),
        ),
    }[name]


@pytest.mark.parametrize("name", ["wan", "hunyuan-video", "ltx-video", "qwen-image", "cogvideox"])
@pytest.mark.parametrize("method", ["yarn", "dype-yarn"])
def test_no_float64_tensor_is_made_on_the_models_device(name, method, tiny):
    case = tiny.CASES[name]
    model = case.make()
    handle = apply_extrapolation(model, method, trained_grid=case.trained)
    handle.time.set(torch.tensor([0.5 * case.timestep_scale]))
    with Float64On("meta") as mode:
        table = _rope_inputs(name, tiny, case.bigger())(model)
    handle.remove()
    assert not mode.seen
    assert all(t.device.type == "meta" and t.dtype in (torch.float32, torch.complex64) for t in tree_leaves(table))
