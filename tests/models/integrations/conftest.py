"""Fixtures of the integration tests: the registered families' tiny configs, how to run them and read
their rope tables, and the reference formulas (tiny_families.py, reference_tables.py)."""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from axialrope.models.integrations.registry import FAMILIES


def load_sibling(name: str):
    """A plain module next to this file (tests are not a package), loaded once."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


tiny_families = load_sibling("tiny_families")
reference_tables = load_sibling("reference_tables")
FAMILY = {family.name: family for family in FAMILIES}


def _tensors(value) -> list:
    """The tensors of nested tuples, in order (None, Lumina2's lengths and the nesting of Allegro and JoyImage
    left out)."""
    if torch.is_tensor(value):
        return [value]
    return [t for item in value for t in _tensors(item)] if isinstance(value, (tuple, list)) else []


def rope_table(model, family, tiny, grid, timestep):
    """What the family's rope gives the blocks for a grid, captured in a forward of the model: the rope
    module's output (of its first call, or every call's concatenated in call order where an ids kind
    declares one call per ids argument, Flux.2; a dict's values, AnyFlow's query and key tables; one
    tensor as a 1-tuple, Helios; nested tables flattened, JoyImage's), or
    (tables from the pipeline) the argument after the pre-hooks swapped it."""
    seen = []
    if family.rope_attr is not None and not isinstance(getattr(model, family.rope_attr), torch.nn.Module):
        hook = _record_attribute(model, family.rope_attr, seen)  # JoyImage's method, Z-Image's plain object
    elif family.rope_attr is not None:
        hook = getattr(model, family.rope_attr).register_forward_hook(lambda m, a, out: seen.append(out))
    else:
        name = family.kind.argument
        hook = model.register_forward_pre_hook(lambda m, a, kw: seen.append(kw[name]), with_kwargs=True)
    try:
        tiny_families.run(model, tiny, grid, timestep)
    finally:
        hook.remove()
    seen = [tuple(_tensors(tuple(out.values()) if isinstance(out, dict) else out)) for out in seen]
    if getattr(family.kind, "separate_calls", ()):  # one call per ids argument (Flux.2, Flux3): all of them
        return tuple(torch.cat(parts) for parts in zip(*seen, strict=True))
    return seen[0]


def _record_attribute(model, name: str, seen: list):
    """Records the outputs of a rope that is no child module (a method of the model's class, JoyImage's; a
    plain object, Z-Image's RopeEmbedder) by shadowing it in the instance's `__dict__`; returns a handle
    whose `remove()` puts back what was there."""
    rope, had = getattr(model, name), name in vars(model)

    def recording(*args, **kwargs):
        seen.append(rope(*args, **kwargs))
        return seen[-1]

    vars(model)[name] = recording

    def remove():
        if had:
            vars(model)[name] = rope
        else:
            vars(model).pop(name)

    return types.SimpleNamespace(remove=remove)


@dataclass
class Case:
    """A family under test.

    make(): the model. run(model, grid, timestep): its output. table(model, grid, timestep): its rope's
    table, captured in a forward. rope_table(model, grid): the same from the rope module (or the
    pipeline-table builder) called alone (set the time on the handle first). trained: the tiny
    trained grid. timestep_scale: the family's timestep at pure noise.
    """

    name: str
    make: Callable
    run: Callable
    table: Callable
    rope_table: Callable
    trained: tuple[int, ...]
    timestep_scale: float

    @property
    def video(self) -> bool:
        return len(self.trained) == 3

    def bigger(self, factor=2):
        return tuple(n * factor for n in self.trained)


def _rope_alone(name: str) -> Callable:
    """Calls the rope module of a family alone for a grid (the tests of the factorization checks)."""
    cpu = torch.device("cpu")
    calls = {
        "flux": lambda m, g: m.pos_embed(torch.cat([torch.zeros(3, 3), tiny_families.flux_ids(*g)])),
        "qwen-image": lambda m, g: m.pos_embed([[(1, *g)]], device=cpu, max_txt_seq_len=5),
        "wan": lambda m, g: m.rope(torch.empty(1, 4, g[0], 2 * g[1], 2 * g[2])),
        "hunyuan-video": lambda m, g: m.rope(torch.empty(1, 4, *g)),
        "cogvideox": _cogvideox_rope_table,
        "ltx-video": lambda m, g: m.rope(torch.empty(1, 1, 4), *g, tiny_families.LTX_SCALE),
    }
    return calls[name]


def _cogvideox_rope_table(model, grid):
    given = tiny_families.cogvideox_pipeline_table(model, grid)
    t, h, w = grid
    table = model._axialrope_extrapolation.rope(torch.empty(1, t, 4, 2 * h, 2 * w), given)
    return given if table is None else table


def make_case(name: str) -> Case:
    family, tiny = FAMILY[name], tiny_families.TINY[name]
    return Case(
        name,
        tiny.make,
        lambda m, g, t: tiny_families.run(m, tiny, g, t),
        lambda m, g, t: rope_table(m, family, tiny, g, t),
        _rope_alone(name),
        tiny.trained,
        family.time.at_noise,
    )


# the six transformer families, each with its own kind of positions (the checks below know each one's format)
CASES = {name: make_case(name) for name in ("flux", "qwen-image", "wan", "hunyuan-video", "cogvideox", "ltx-video")}


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every integration test runs on one torch thread (tests/conftest.py)."""


@pytest.fixture(params=list(CASES))
def case(request) -> Case:
    return CASES[request.param]


@pytest.fixture
def tiny():
    """The tiny builders and helpers, for tests that need more than `case`."""
    return types.SimpleNamespace(
        CASES=CASES,
        FAMILY=FAMILY,
        TINY=tiny_families.TINY,
        TINY_MODULE=tiny_families,
        LTX_SCALE=tiny_families.LTX_SCALE,
        flux_ids=tiny_families.flux_ids,
        make_flux=tiny_families.make_flux,
        make_wan=tiny_families.make_wan,
        make_qwen=tiny_families.make_qwen,
        make_hunyuan=tiny_families.make_hunyuan,
        make_cogvideox=tiny_families.make_cogvideox,
        make_ltx=tiny_families.make_ltx,
        cogvideox_pipeline_table=tiny_families.cogvideox_pipeline_table,
        run=tiny_families.run,
        run_flux=CASES["flux"].run,
        run_wan=CASES["wan"].run,
        rope_table=rope_table,
        families=tiny_families,
    )


@pytest.fixture
def reference():
    """reference_tables.py: each method's per-axis formula and each rope kind's float64 table."""
    return reference_tables
