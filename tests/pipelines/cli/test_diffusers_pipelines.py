"""`axialrope sample` / `compare` on diffusers' own pipelines (tiny random Flux and Wan saved to a folder), at 2x."""

import numpy as np
import pytest
from PIL import Image

from axialrope.pipelines.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


def flux_args(folder, out, *extra):
    return [
        "sample",
        "--model",
        str(folder),
        "--prompt",
        "a red cube",
        "--height",
        "32",
        "--width",
        "32",
        "--steps",
        "2",
        "--trained-grid",
        "8",
        "8",
        "--out",
        str(out),
        *extra,
    ]


def test_sample_drives_the_flux_pipeline_at_twice_its_trained_size(tiny_flux_folder, tmp_path, capsys):
    outputs = {}
    for method in ("none", "dype-yarn", "pi+entropy", "sega", "auto"):
        out = tmp_path / f"{method}.png"
        assert main(flux_args(tiny_flux_folder, out, *(["--extrapolation", method] if method != "auto" else []))) == 0
        line = capsys.readouterr().out
        assert "FluxPipeline" in line
        outputs[method] = np.asarray(Image.open(out))
    assert "extrapolation auto: none)" in line  # the default: a diffusers pipeline records no method of its own
    assert outputs["none"].shape[:2] == (32, 32)  # one image, no grid around it
    assert not np.array_equal(outputs["none"], outputs["dype-yarn"])
    assert not np.array_equal(outputs["none"], outputs["pi+entropy"])
    assert not np.array_equal(outputs["none"], outputs["sega"])
    assert np.array_equal(outputs["none"], outputs["auto"])  # auto is plain none, the family's own behaviour


def test_sample_drives_the_wan_pipeline_with_frames(tiny_wan_folder, tmp_path, capsys):
    out = tmp_path / "clip.gif"
    args = [
        "sample",
        "--model",
        str(tiny_wan_folder),
        "--prompt",
        "a wave",
        "--height",
        "64",
        "--width",
        "64",
        "--frames",
        "13",
        "--steps",
        "2",
        "--trained-grid",
        "2",
        "2",
        "2",
        "--extrapolation",
        "yarn",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert "13 frames" in capsys.readouterr().out
    gif = Image.open(out)
    assert gif.n_frames == 13 and gif.size == (64, 64)


def test_compare_puts_every_method_of_a_family_side_by_side(tiny_flux_folder, tmp_path, capsys):
    out = tmp_path / "compare.png"
    args = [
        "compare",
        "--model",
        str(tiny_flux_folder),
        "--prompt",
        "a cat",
        "--height",
        "32",
        "--width",
        "32",
        "--steps",
        "2",
        "--trained-grid",
        "8",
        "8",
        "--methods",
        "none",
        "ntk",
        "dype-ntk",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    assert "3 methods: none, ntk, dype-ntk" in capsys.readouterr().out
    assert Image.open(out).width == 3 * 32 + 4 * 6  # three panels with their gaps


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "give --prompt"),
        (["--prompt", "a cat", "--frames", "5"], "--frames given, but FluxPipeline makes images"),
        (["--prompt", "a cat", "--extrapolation", "riflex"], "is an image model"),
        (["--prompt", "a cat", "--trained-grid", "8"], "trained_grid must have 2 axes"),
        (["--prompt", "a cat", "--option", "shift_cap=maybe"], "shift_cap must be True, False or None"),
        (["--prompt", "a cat", "--out", "x.gif"], "an image model's output must end in one of"),
    ],
)
def test_bad_family_input_is_a_usage_error(tiny_flux_folder, tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    out = [] if "--out" in extra else ["--out", "x.png"]
    args = ["sample", "--model", str(tiny_flux_folder), "--steps", "1", "--height", "32", "--width", "32", *out, *extra]
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["sample", "compare"])
def test_a_hub_id_that_cannot_be_fetched_is_one_line_not_a_traceback(command, tmp_path, capsys, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # never reach out, even with a network
    monkeypatch.chdir(tmp_path)
    code = main([command, "--model", "black-forest-labs/FLUX.1-dev", "--prompt", "a fox", "--out", "fox.png"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"axialrope {command}: could not load 'black-forest-labs/FLUX.1-dev' (not a local folder")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_highres_benchmark_runs_on_a_tiny_pipeline(tiny_wan_folder, tmp_path, monkeypatch, capsys):
    """benchmarks/diffusers_highres.py is for real weights on a GPU; here it only has to run end to end."""
    import runpy
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "benchmarks" / "diffusers_highres.py"
    out = tmp_path / "wan.png"
    monkeypatch.setattr(
        sys,
        "argv",
        [
            str(script),
            "--model",
            str(tiny_wan_folder),
            "--prompt",
            "a wave",
            "--height",
            "32",
            "--width",
            "32",
            "--frames",
            "9",
            "--steps",
            "1",
            "--trained-grid",
            "2",
            "2",
            "2",
            "--methods",
            "none",
            "riflex",
            "dype-yarn",
            "--out",
            str(out),
        ],
    )
    runpy.run_path(str(script), run_name="__main__")
    assert (tmp_path / "wan-32x32x9.png").is_file()
    assert (tmp_path / "wan.csv").read_text().count("\n") == 4  # header and three methods


def test_the_cli_knows_every_registered_familys_own_options():
    from axialrope.models.integrations.registry import FAMILIES
    from axialrope.pipelines.cli.sample import FAMILY_OPTIONS

    assert set(FAMILY_OPTIONS) == {option for family in FAMILIES for option in family.options()}


@pytest.mark.parametrize("command", ["sample", "compare"])
def test_a_folder_whose_transformer_is_of_no_registered_family_is_refused_before_loading(command, tmp_path, capsys):
    import json

    folder = tmp_path / "sd3"
    folder.mkdir()
    (folder / "model_index.json").write_text(
        json.dumps({"_class_name": "StableDiffusion3Pipeline", "transformer": ["diffusers", "SD3Transformer2DModel"]})
    )
    code = main([command, "--model", str(folder), "--prompt", "a fox", "--out", str(tmp_path / "fox.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "SD3Transformer2DModel is of no registered family" in err and "FluxTransformer2DModel" in err
    assert len(err.splitlines()) == 1


def unbuilt(name: str):
    """A diffusers pipeline object without its components: `fit_to_call` reads only its class's __call__."""
    import diffusers

    cls = getattr(diffusers, name)
    return cls.__new__(cls)


def test_the_frames_go_under_the_name_the_pipeline_takes():
    from axialrope.pipelines.sampling.diffusers_families import fit_to_call

    assert fit_to_call(unbuilt("SanaVideoPipeline"), {"prompt": "a wave", "num_frames": 9}) == {
        "prompt": "a wave",
        "frames": 9,
    }
    assert fit_to_call(unbuilt("WanVACEPipeline"), {"prompt": "a wave", "num_frames": 9}) == {
        "prompt": "a wave",
        "num_frames": 9,
    }


def test_an_image_pipeline_on_a_video_transformer_makes_images():
    from axialrope.pipelines.sampling.diffusers_families import fit_to_call, is_video_pipeline

    pipe = unbuilt("Kandinsky5T2IPipeline")  # Kandinsky 5's image pipeline, on the video family's transformer
    assert not is_video_pipeline(pipe) and is_video_pipeline(unbuilt("Kandinsky5T2VPipeline"))
    assert fit_to_call(pipe, {"prompt": "a hat", "num_videos_per_prompt": 2}) == {
        "prompt": "a hat",
        "num_images_per_prompt": 2,
    }


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("ChronoEditPipeline", {"prompt": "a hat"}, "ChronoEditPipeline needs image, which this command does not pass"),
        ("HunyuanVideoFramepackPipeline", {"prompt": "a hat"}, "needs image"),
        (
            "MotifVideoPipeline",
            {"prompt": "a hat", "guidance_scale": 5.0},
            "MotifVideoPipeline takes no guidance_scale",
        ),
    ],
)
def test_what_a_pipeline_needs_or_refuses_is_named_before_it_runs(name, kwargs, message):
    from axialrope.pipelines.sampling.diffusers_families import fit_to_call

    with pytest.raises(ValueError, match=message):
        fit_to_call(unbuilt(name), kwargs)


def test_a_folder_whose_transformer_no_family_reaches_says_why(tmp_path, capsys):
    import json

    folder = tmp_path / "animate2"
    folder.mkdir()
    index = {"_class_name": "WanAnimate2Pipeline", "transformer": ["diffusers", "WanAnimate2Transformer3DModel"]}
    (folder / "model_index.json").write_text(json.dumps(index))
    code = main(["sample", "--model", str(folder), "--prompt", "a fox", "--out", str(tmp_path / "fox.gif")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "WanAnimate2Transformer3DModel cannot be extrapolated: its rope is no module" in err
