"""The distribution installs models/ and pipelines/ inside axialrope, and nothing else at the top."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


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
        folder = f"axialrope/pipelines/assets/{model}"
        for part in ("model_index.json", "scheduler/scheduler_config.json", "transformer/config.json",
                     "transformer/diffusion_pytorch_model.safetensors"):
            assert f"{folder}/{part}" in names


def test_installed_subpackages_import():
    import axialrope.models
    import axialrope.pipelines

    assert Path(axialrope.models.__file__).parent.name == "models"
    assert Path(axialrope.pipelines.__file__).parent.name == "pipelines"
