"""The registry: lookups, the trained grids with their sources and the pipelines' defaults, and the
family table of docs/diffusers.md generated from it."""

import inspect
from pathlib import Path

import pytest

from axialrope.models.integrations import family_table
from axialrope.models.integrations.registry import FAMILIES, family_for_class, family_of

DOCS = Path(__file__).resolve().parents[3] / "docs" / "diffusers.md"


def test_the_docs_family_table_is_the_generated_one():
    text = DOCS.read_text()
    begin, end = text.index(family_table.TABLE_BEGIN), text.index(family_table.TABLE_END)
    committed = text[begin + len(family_table.TABLE_BEGIN) : end].strip()
    assert committed == family_table.markdown_table().strip(), (
        "docs/diffusers.md's family table is stale: python -m axialrope.models.integrations.family_table "
        "--write docs/diffusers.md"
    )


def test_every_trained_grid_has_a_source_and_names_are_unique():
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    assert len({c for f in FAMILIES for c in f.classes}) == sum(len(f.classes) for f in FAMILIES)
    for family in FAMILIES:
        assert family.trained and not family.trained[-1].when, family.name  # the last one is the default
        for grid in family.trained:
            assert len(grid.source) > 40 and all(n > 0 for n in grid.grid), (family.name, grid)


def test_the_config_picks_the_trained_grid():
    wan, cogvideox = family_for_class("WanTransformer3DModel"), family_for_class("CogVideoXTransformer3DModel")
    assert wan.trained_grid({"in_channels": 16}).grid == (21, 30, 52)
    assert wan.trained_grid({"in_channels": 48}).grid == (31, 22, 40)
    assert cogvideox.trained_grid({"patch_size_t": None}).grid == (13, 30, 45)
    assert cogvideox.trained_grid({"patch_size_t": 2}).grid == (11, 48, 85)


def test_pipeline_defaults_shown_beside_the_trained_grids_are_the_pipelines_own():
    """Qwen-Image is trained at 1328 px and its pipeline samples 1024 px; WanPipeline's 81 frames at
    480 x 832 px through Wan 2.2 TI2V-5B's VAE (16x, 4x) and 2 x 2 patches."""
    from diffusers import FlowMatchEulerDiscreteScheduler, QwenImagePipeline, WanPipeline

    qwen = family_for_class("QwenImageTransformer2DModel").trained[-1]
    pipe = QwenImagePipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), vae=None, text_encoder=None, tokenizer=None, transformer=None
    )
    side = pipe.default_sample_size * pipe.vae_scale_factor // 16
    assert (qwen.grid, qwen.pipeline_default) == ((83, 83), (side, side))
    defaults = inspect.signature(WanPipeline.__call__).parameters
    frames, height, width = (defaults[n].default for n in ("num_frames", "height", "width"))
    ti2v = family_for_class("WanTransformer3DModel").trained_grid({"in_channels": 48})
    assert ti2v.pipeline_default == ((frames - 1) // 4 + 1, height // 32, width // 32)


def test_a_subclass_is_found_and_an_unknown_model_is_named(tiny):
    from diffusers import FluxTransformer2DModel

    class MyFlux(FluxTransformer2DModel):
        pass

    assert (
        family_of(
            MyFlux(
                num_layers=1,
                num_single_layers=1,
                attention_head_dim=16,
                num_attention_heads=1,
                joint_attention_dim=8,
                pooled_projection_dim=8,
                axes_dims_rope=(4, 6, 6),
            )
        ).name
        == "flux"
    )
    with pytest.raises(TypeError, match="FluxTransformer2DModel"):
        family_of(object())


def test_every_unreached_class_is_a_diffusers_class_that_no_family_covers():
    import diffusers

    from axialrope.models.integrations.registry import UNREACHED

    for name, reason in UNREACHED.items():
        assert hasattr(diffusers, name) and family_for_class(name) is None, name
        assert len(reason) > 40, name
