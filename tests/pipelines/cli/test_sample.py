"""`axialrope sample` and `axialrope compare`, and the bundled models they default to."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from axialrope.models import create_dit
from axialrope.pipelines.cli import main
from axialrope.pipelines.dit.bundled import BUNDLED_MODELS, assets_folder, bundled_model_path, load_dit
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline


@pytest.fixture(scope="module")
def tiny_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipes")
    torch.manual_seed(0)
    image = create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=2)
    AxialDiTPipeline.from_model(image, class_names=["circle", "ring"]).save_pretrained(root / "image")
    video = create_dit(
        "tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3, num_classes=0
    )
    AxialDiTPipeline.from_model(video).save_pretrained(root / "video")
    return root


def test_bundled_models_are_pipelines_of_the_trained_sizes():
    sizes = {
        "shapes-rope": (8, 8),
        "shapes-sincos": (8, 8),
        "moving-shapes-rope": (8, 8, 8),
        "textures-rope": (8, 8),
        "textures-sincos": (8, 8),
    }
    classes = {"shapes": 6, "moving": 6, "textures": 4}
    assert set(BUNDLED_MODELS) == set(sizes)
    total = sum(f.stat().st_size for f in assets_folder().rglob("*") if f.is_file())
    assert total < 30e6
    for name in sizes:
        index = json.loads((bundled_model_path(name) / "model_index.json").read_text())
        config = json.loads((bundled_model_path(name) / "transformer" / "config.json").read_text())
        assert index["_class_name"] == "AxialDiTPipeline" and len(index["class_names"]) == config["num_classes"]
        assert config["num_classes"] == classes[name.split("-")[0]]
        assert config["position_encoding"] == ("sincos" if "sincos" in name else "rope")
        assert (bundled_model_path(name) / "transformer" / "diffusion_pytorch_model.safetensors").is_file()
    pipe = AxialDiTPipeline.from_pretrained(bundled_model_path("moving-shapes-rope"))
    assert pipe.transformer.base_grid == sizes["moving-shapes-rope"]


def test_load_dit_reads_bundled_names_pipeline_folders_and_model_folders(tiny_folders, tmp_path):
    from axialrope.models import DiT

    assert load_dit("shapes-rope").config.position_encoding == "rope"
    assert load_dit(tiny_folders / "video").n_axes == 3  # a pipeline folder: its transformer/
    DiT.from_pretrained(tiny_folders / "video" / "transformer").save_pretrained(tmp_path / "bare")
    assert load_dit(tmp_path / "bare").n_axes == 3
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dit(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="neither a DiT model folder"):
        load_dit(tmp_path / "empty")


def test_sample_on_the_bundled_model_writes_a_grid(tmp_path):
    out = tmp_path / "sample.png"
    assert (
        main(
            [
                "sample",
                "--classes",
                "circle",
                "square",
                "--num",
                "1",
                "--steps",
                "1",
                "--height",
                "48",
                "--width",
                "64",
                "--extrapolation",
                "yarn+entropy",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert Image.open(out).size == (64 + 2 * 2, 2 * 48 + 3 * 2)  # one column, two rows, torchvision padding 2


def test_sample_writes_video_as_gif_png_and_frames(tiny_folders, tmp_path):
    out = tmp_path / "clip.png"
    assert (
        main(
            [
                "sample",
                "--model",
                str(tiny_folders / "video"),
                "--frames",
                "6",
                "--num",
                "2",
                "--steps",
                "1",
                "--extrapolation",
                "riflex",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    gif = Image.open(out.with_suffix(".gif"))
    assert gif.n_frames == 6 and gif.size == (2 * 8 + 3 * 2, 8 + 2 * 2)  # the two clips side by side
    assert len(list((tmp_path / "clip_frames").glob("frame_*.png"))) == 6
    assert Image.open(out).size == (gif.size[0], 6 * gif.size[1])  # a row per frame


def test_compare_puts_one_labelled_panel_per_method_side_by_side(tiny_folders, tmp_path):
    two, three = tmp_path / "two.png", tmp_path / "three.png"
    common = [
        "compare",
        "--model",
        str(tiny_folders / "image"),
        "--height",
        "32",
        "--width",
        "32",
        "--num",
        "1",
        "--steps",
        "1",
    ]
    assert main(common + ["--methods", "none", "pi", "--out", str(two)]) == 0
    assert main(common + ["--methods", "none", "pi", "dype-yarn+entropy", "--out", str(three)]) == 0
    width_two, width_three = Image.open(two).size[0], Image.open(three).size[0]
    assert width_three - width_two == (width_two - 6) // 2  # one more panel and gap of the same width


AUTO_BANDS = [
    {"up_to_scale": 1.5, "method": "pi", "entropy_scaling": False},
    {"up_to_scale": None, "method": "yarn", "entropy_scaling": True},
]


@pytest.fixture(scope="module")
def banded_folder(tmp_path_factory):
    """A tiny image pipeline (16 x 16 px, patch 2) that records AUTO_BANDS in its model_index.json."""
    folder = tmp_path_factory.mktemp("banded") / "image"
    torch.manual_seed(0)
    model = create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=2)
    AxialDiTPipeline.from_model(model, default_extrapolation=AUTO_BANDS).save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "args, shown",
    [
        (["--height", "32", "--width", "32"], "extrapolation auto: yarn + entropy scaling, 1 step of euler"),
        (["--height", "24", "--width", "16"], "extrapolation auto: pi, 1 step of euler"),
        (["--height", "24", "--extrapolation", "auto+entropy"], "extrapolation auto: pi + entropy scaling, 1 step"),
        (["--height", "24", "--entropy-scaling"], "extrapolation auto: pi + entropy scaling, 1 step"),
        ([], "extrapolation auto: none, 1 step of euler"),  # the trained size: nothing to extrapolate
        (
            ["--height", "32", "--option", "beta_fast=16"],
            "extrapolation auto: yarn (beta_fast=16.0) + entropy scaling, 1 step",
        ),
        (["--height", "32", "--extrapolation", "pi"], "(1 image of 32x16; extrapolation pi, 1 step of euler)"),
    ],
)
def test_sample_with_auto_names_the_method_it_resolved_to(banded_folder, tmp_path, capsys, args, shown):
    out = tmp_path / "a.png"
    assert (
        main(
            [
                "sample",
                "--model",
                str(banded_folder),
                "--classes",
                "0",
                "--num",
                "1",
                "--steps",
                "1",
                "--out",
                str(out),
                *args,
            ]
        )
        == 0
    )
    assert shown in capsys.readouterr().out
    assert out.is_file()


def test_extrapolation_defaults_to_auto_and_its_help_says_what_auto_does():
    from axialrope.pipelines.cli import command_parser

    _, parser = command_parser("sample")
    assert parser.parse_args([]).extrapolation == "auto"
    action = next(a for a in parser._actions if a.dest == "extrapolation")
    assert "auto (default): the method the model's pipeline records for the requested scale" in action.help
    assert "none for diffusers pipelines" in action.help


def test_make_extrapolation_resolves_auto_only_through_its_caller():
    from axialrope import Extrapolation
    from axialrope.pipelines.cli.sample import make_extrapolation, plain_extrapolation

    assert make_extrapolation("auto", auto=plain_extrapolation) == Extrapolation("none")
    assert make_extrapolation("auto+entropy", auto=plain_extrapolation) == Extrapolation("none", entropy_scaling=True)
    yarn = make_extrapolation("auto", options={"beta_fast": 16.0}, auto=lambda entropy_scaling: Extrapolation("yarn"))
    assert yarn == Extrapolation("yarn", beta_fast=16.0)
    with pytest.raises(ValueError, match="method must be one of"):  # compare has no size to resolve it for
        make_extrapolation("auto")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "no/such/folder"], "no such folder"),
        (["--extrapolation", "ntk-aware"], "method must be one of"),
        (["--option", "beta_fast"], "KEY=VALUE"),
        (["--option", "beta_fast=0.5"], "beta_fast > beta_slow"),
        (["--height", "30"], "not divisible by the model's patch size 4"),
        (["--frames", "8"], "num_frames given, but this is an image model"),
        (["--classes", "hexagon"], "unknown class 'hexagon'"),
        (["--out", "x.gif"], "an image model's output must end in one of .png, .jpg"),
    ],
)
def test_sample_reports_bad_input_with_exit_code_2(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sample", "--steps", "1", "--num", "1", "--out", "x.png", *args]) == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_output_names_are_checked_before_sampling(tiny_folders, tmp_path, capsys):
    video = ["sample", "--model", str(tiny_folders / "video"), "--steps", "1", "--num", "1"]
    assert main(video + ["--out", str(tmp_path / "clip.avi")]) == 2
    assert "a video model's output must end in one of .png, .gif, .mp4" in capsys.readouterr().err
    assert main(video + ["--fps", "0", "--out", str(tmp_path / "clip.gif")]) == 2
    assert "--fps must be a number from 0.01 to 100" in capsys.readouterr().err
    assert main(["compare", "--model", str(tiny_folders / "image"), "--out", str(tmp_path / "c.mp4")]) == 2
    assert "output must end in one of .png" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
