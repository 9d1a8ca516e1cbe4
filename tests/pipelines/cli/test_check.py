"""`axialrope check` and the peer adapters behind it."""

import pytest
import torch

from axialrope import grid_coords
from axialrope.pipelines.checks.peers import IMPLEMENTATIONS, grid_rotation
from axialrope.pipelines.cli import main
from axialrope.testing import CHECK_NAMES, run_checks

STRUCTURE = ["relative", "separable", "orthogonal", "reduction", "batch"]


def test_check_prints_a_table_of_implementations_by_property(capsys):
    assert main(["check", "--impl", "axialrope-half", "axialrope-interleaved", "--axes", "1", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:6] == ["implementation", "relative", "separable", "orthogonal", "reduction", "batch"]
    rows = {line.split()[0] + " " + line.split()[1]: line for line in lines[1:5]}
    assert set(rows) == {f"axialrope-{layout} {n}D" for layout in ("half", "interleaved") for n in (1, 3)}
    assert rows["axialrope-half 3D"].count("pass") == len(CHECK_NAMES)
    assert "n/a" in rows["axialrope-half 1D"]  # separability needs two axes
    assert "axialrope-half 1D separable: n/a: one axis" in "\n".join(lines)


def test_markdown_table(capsys):
    main(["check", "--impl", "axialrope-half", "--axes", "2", "--markdown", "--large", "4096"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| implementation | relative |") and "fp32 @4096" in lines[0]
    assert lines[1] == "| " + " | ".join(["---"] * (len(CHECK_NAMES) + 1)) + " |"
    assert lines[2].startswith("| axialrope-half 2D | pass")


def test_strict_exits_1_when_a_check_fails(capsys):
    args = ["check", "--impl", "rotary-embedding-torch-offsets", "--axes", "2"]
    assert main(args) == 0
    assert main(args + ["--strict"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_implementations_without_the_requested_axes_are_skipped(capsys):
    main(["check", "--impl", "wan", "--axes", "2"])
    assert "wan: skipped, it supports 3 axes only" in capsys.readouterr().out


def test_cli_lists_the_check_command(capsys):
    main([])
    assert "check" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    ["axialrope-half", "axialrope-interleaved", "flux", "cogvideox", "wan", "hunyuanvideo", "rotary-embedding-torch"],
)
def test_adapters_map_coordinates_to_the_peers_positions(name):
    """Every adapter declares its per-axis layout, so the reduction check compares each axis
    with 1D RoPE at the token's coordinate: a wrong row or a wrong transpose would fail it."""
    impl = IMPLEMENTATIONS[name]
    for n_axes in impl.default_axes:
        subject = impl.build(n_axes)
        assert subject.axes_dims is not None
        for result in run_checks(subject, STRUCTURE):
            assert result.passed is not False, f"{name} {n_axes}D {result}"


def test_grid_adapter_rotates_a_whole_grid_like_the_peer():
    """HunyuanVideo's own table for a 2x3x4 grid, applied as its attention does, token by token."""
    from diffusers.models.embeddings import apply_rotary_emb
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed

    subject = IMPLEMENTATIONS["hunyuanvideo"].build(3)
    x = torch.randn(2, 3, 24, subject.dim)
    cos, sin = HunyuanVideoRotaryPosEmbed(1, 1, [16, 56, 56], 256.0)(torch.empty(1, 0, 2, 3, 4))
    expected = apply_rotary_emb(x.transpose(1, 2), (cos, sin), sequence_dim=1).transpose(1, 2)
    torch.testing.assert_close(subject.rotate(x, grid_coords(2, 3, 4)), expected, rtol=0, atol=0)
    shuffled = torch.randperm(24)
    torch.testing.assert_close(
        subject.rotate(x[:, :, shuffled], grid_coords(2, 3, 4)[shuffled]), expected[:, :, shuffled], rtol=0, atol=0
    )


def test_grid_adapters_refuse_coordinates_off_the_grid():
    rotate = grid_rotation(lambda sizes, origin: torch.zeros(1, 1), lambda x, rows: x, max_tokens=100)
    x = torch.zeros(1, 1, 1, 4)
    with pytest.raises(ValueError, match="non-negative integers"):
        rotate(x, torch.tensor([[0.5]]))
    with pytest.raises(ValueError, match="non-negative integers"):
        rotate(x, torch.tensor([[-1.0]]))
    with pytest.raises(ValueError, match="max_tokens"):
        rotate(x, torch.tensor([[100.0]]))


def test_rotary_embedding_torch_offsets_fail_through_its_cache():
    """The cache keys on the grid length only: a second call with other offsets gets the first
    call's table. Without the cache the same adapter passes, so the adapter is not the cause."""
    cached = run_checks(IMPLEMENTATIONS["rotary-embedding-torch-offsets"].build(2), ["reduction", "batch"])
    uncached = run_checks(IMPLEMENTATIONS["rotary-embedding-torch-offsets-nocache"].build(2), ["reduction", "batch"])
    assert [r.passed for r in cached] == [False, False]
    assert [r.passed for r in uncached] == [True, True]


def test_float32_angle_peers_lose_precision_at_large_coordinates():
    """HunyuanVideo forms angles in float32 (get_1d_rotary_pos_embed's default); Wan in float64."""
    hunyuan = run_checks(IMPLEMENTATIONS["hunyuanvideo"].build(3), ["precision_float32", "precision_bfloat16"])
    wan = run_checks(IMPLEMENTATIONS["wan"].build(3), ["precision_float32"])
    assert [r.passed for r in hunyuan] == [False, True]
    assert wan[0].passed


def test_the_cli_runs_as_a_module_for_accelerate_launch():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "axialrope.pipelines.cli", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "commands:" in done.stdout
