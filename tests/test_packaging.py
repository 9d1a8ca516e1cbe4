"""The distribution installs models/ and pipelines/ inside axialrope, and nothing else at the top."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_maps_models_and_pipelines_inside_axialrope(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
    )
    (wheel,) = tmp_path.glob("axialrope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "axialrope/__init__.py" in names
    assert "axialrope/models/__init__.py" in names
    assert "axialrope/pipelines/__init__.py" in names
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"axialrope"}
    # the bundled models travel as package data, so a non-editable install can sample
    for model in ("shapes-rope", "shapes-sincos", "moving-shapes-rope"):
        folder = f"axialrope/pipelines/dit/assets/{model}"
        for part in (
            "model_index.json",
            "scheduler/scheduler_config.json",
            "transformer/config.json",
            "transformer/diffusion_pytorch_model.safetensors",
        ):
            assert f"{folder}/{part}" in names


def test_installed_subpackages_import():
    import axialrope.models
    import axialrope.pipelines

    assert Path(axialrope.models.__file__).parent.name == "models"
    assert Path(axialrope.pipelines.__file__).parent.name == "pipelines"


def test_the_package_roots_export_what_a_user_needs():
    import axialrope
    import axialrope.models
    import axialrope.pipelines

    for package in (axialrope, axialrope.models, axialrope.pipelines):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"
    assert axialrope.pipelines.AxialDiTPipeline.__name__ == "AxialDiTPipeline"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = axialrope.pipelines.nothing


def test_importing_the_pipelines_root_does_not_load_the_training_stack():
    code = "import sys, axialrope.pipelines; print('accelerate' in sys.modules, 'diffusers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "False"]


def test_each_package_lists_at_most_twelve_modules_at_its_top_level():
    for folder in [REPO / "axialrope", REPO / "models", REPO / "pipelines"] + [
        p for top in ("models", "pipelines") for p in (REPO / top).iterdir() if (p / "__init__.py").is_file()
    ]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= 12, f"{folder.relative_to(REPO)} has {len(modules)} modules"


def test_the_bundled_assets_stay_small_enough_to_ship():
    """The package carries the bundled models only; the photographs models (benchmarks) stay in outputs/."""
    assets = REPO / "pipelines" / "dit" / "assets"
    total = sum(path.stat().st_size for path in assets.rglob("*") if path.is_file())
    assert 0 < total < 30 * 2**20
    assert not any(path.name.startswith("photos") for path in assets.iterdir())
