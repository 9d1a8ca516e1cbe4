"""AxialDiTPipeline is found by diffusers' DiffusionPipeline.from_pretrained once it is imported (importing it
registers it; the core imports nothing of the pipelines); folders saved under the project's old name still load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import torch
from diffusers import DiffusionPipeline

from axialrope.models import create_dit
from axialrope.pipelines.dit.bundled import bundled_model_path
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

LOAD_WITH_DIFFUSERS = """
import sys
import axialrope
from diffusers import DiffusionPipeline
try:
    DiffusionPipeline.from_pretrained(sys.argv[1])  # the core alone registers nothing
except AttributeError as error:
    print("before:", error)
from axialrope.pipelines import AxialDiTPipeline  # what the README says to import first
import torch
pipe = DiffusionPipeline.from_pretrained(sys.argv[1])
pipe.set_progress_bar_config(disable=True)
images = pipe(class_labels=["ring"], num_inference_steps=2, generator=torch.Generator().manual_seed(0)).images
print(type(pipe).__module__, type(pipe).__name__, images[0].size)
"""


@pytest.mark.slow
def test_diffusion_pipeline_from_pretrained_finds_the_pipeline_once_it_is_imported(tmp_path):
    script = tmp_path / "load.py"
    script.write_text(LOAD_WITH_DIFFUSERS)
    process = subprocess.run(
        [sys.executable, str(script), str(bundled_model_path("shapes-rope"))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    before, after = process.stdout.splitlines()
    assert before == "before: module diffusers has no attribute AxialDiTPipeline"
    assert after.split() == ["axialrope.pipelines.dit.pipeline", "AxialDiTPipeline", "(32,", "32)"]
    stderr = [line for line in process.stderr.replace("\r", "\n").splitlines() if line.strip() and "it/s]" not in line]
    assert stderr == []  # no "unexpected class_names", no other warning


def test_a_saved_pipeline_loads_with_diffusion_pipeline_and_samples_the_same(tmp_path):
    model = create_dit("tiny", sample_size=8, patch_size=2, in_channels=3, num_classes=2)
    pipe = AxialDiTPipeline.from_model(model, class_names=["a", "b"])
    pipe.save_pretrained(tmp_path / "pipe")
    assert json.loads((tmp_path / "pipe" / "model_index.json").read_text())["_class_name"] == "AxialDiTPipeline"
    loaded = DiffusionPipeline.from_pretrained(tmp_path / "pipe")
    assert type(loaded) is AxialDiTPipeline and loaded.config.class_names == ["a", "b"]
    kwargs = dict(class_labels=["b"], num_inference_steps=2, output_type="pt")
    assert torch.equal(
        loaded(generator=torch.Generator().manual_seed(0), **kwargs).images,
        pipe(generator=torch.Generator().manual_seed(0), **kwargs).images,
    )


def test_a_folder_saved_under_the_old_name_loads_if_it_is_an_axialrope_one(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(bundled_model_path("shapes-rope"), old)
    index = json.loads((old / "model_index.json").read_text())
    (old / "model_index.json").write_text(json.dumps({**index, "_class_name": "DiTPipeline"}))
    pipe = AxialDiTPipeline.from_pretrained(old)
    assert type(pipe) is AxialDiTPipeline and pipe.config.class_names[0] == "circle"
    pipe.save_pretrained(tmp_path / "resaved")  # saved again, it carries the new name
    assert json.loads((tmp_path / "resaved" / "model_index.json").read_text())["_class_name"] == "AxialDiTPipeline"
    # diffusers' own DiT pipeline, under the same old name, is not this project's
    (old / "model_index.json").write_text(
        json.dumps({**index, "_class_name": "DiTPipeline", "transformer": ["diffusers", "DiTTransformer2DModel"]})
    )
    with pytest.raises(
        ValueError, match="holds a 'DiTPipeline'; AxialDiTPipeline.from_pretrained loads AxialDiTPipeline folders"
    ):
        AxialDiTPipeline.from_pretrained(old)
