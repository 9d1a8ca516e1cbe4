"""Calibration: reference images at each size, the table and its picks, the bands it records, and one cell
implementation shared with benchmarks/extrapolation.py."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pytest
import torch
from PIL import Image

from axialrope.models import create_dit
from axialrope.pipelines import calibrate
from axialrope.pipelines.dit.default_extrapolation import check_default_extrapolation
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.evaluation.calibrate import (
    Calibration,
    ScaleResult,
    check_methods,
    check_scales,
    measure,
    target_size,
)
from axialrope.pipelines.evaluation.cells import Method, References, image_methods
from axialrope.pipelines.evaluation.references import ReferenceImages, serves

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"


def tiny_pipe(side: int = 8, patch: int = 2, classes: int = 2, position_encoding: str = "rope") -> AxialDiTPipeline:
    torch.manual_seed(0)
    model = create_dit(
        "tiny",
        sample_size=side,
        patch_size=patch,
        in_channels=3,
        num_classes=classes,
        position_encoding=position_encoding,
    ).eval()
    pipe = AxialDiTPipeline.from_model(model)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def pictures(count: int, side: int, seed: int = 0) -> torch.Tensor:
    return torch.rand(count, 3, side, side, generator=torch.Generator().manual_seed(seed))


def test_an_image_serves_a_size_when_its_centre_crop_holds_the_pixels():
    assert serves(24, 24, (16, 16)) and serves(16, 16, (16, 16)) and not serves(15, 40, (16, 16))
    assert serves(48, 16, (16, 32)) and not serves(30, 16, (16, 32))  # the crop to 1:2 is 16 x 30


def test_a_folder_is_read_as_training_reads_it_and_small_images_are_counted(tmp_path):
    for name, colour in (("b", (0, 0, 255)), ("a", (255, 0, 0))):
        (tmp_path / name).mkdir()
        for index, side in enumerate((20, 20, 20, 9)):
            shade = (colour[0], 40 * index, colour[2])  # every image its own
            Image.new("RGB", (side, side), shade).save(tmp_path / name / f"{index}.png")
    images = ReferenceImages(tmp_path, class_names=["x", "a", "b"], num_classes=3)
    assert images.usable(16, 16) == ([0, 1, 2, 4, 5, 6], 2) and images.usable(8, 8)[1] == 0
    drawn = images.draw((16, 16), seed=1, num=8)  # 6 serve: 3 a set, disjoint
    assert drawn.real.shape == drawn.floor.shape == (3, 3, 16, 16)
    assert 0 <= drawn.real.min() and drawn.real.max() <= 1
    # the labels are the model's ids of the folders' names ("a" is 1, "b" is 2), matching each image's colour
    assert all(
        (label == 1) == bool(image[0].mean() > 0.5) for label, image in zip(drawn.labels, drawn.real, strict=True)
    )
    again = images.draw((16, 16), seed=1, num=8)
    assert torch.equal(again.real, drawn.real) and not torch.equal(images.draw((16, 16), 2, 8).real, drawn.real)
    with pytest.raises(ValueError, match="0 of its 8 images are large enough for 32x32 .8 too small"):
        images.check([(16, 16), (32, 32)])


def test_a_flat_folder_or_a_tensor_draws_the_models_classes_in_turn():
    images = ReferenceImages(pictures(6, 12), num_classes=4)
    assert images.labels.tolist() == [0, 1, 2, 3, 0, 1]
    assert ReferenceImages(pictures(6, 12), num_classes=0).draw((8, 8), 0, 2).labels is None


def test_sizes_scales_and_methods():
    assert target_size((32, 32), (4, 4), 1.5) == (48, 48) and target_size((8, 16), (2, 2), 1.5) == (12, 24)
    assert check_scales([3, 1.5, 2, 2]) == [1.5, 2.0, 3.0]
    assert [m.label for m in check_methods(["pi", "yarn+entropy", "pi"], rope=True)] == ["pi", "yarn+entropy"]
    assert check_methods(None, rope=False) == [Method("none"), Method("none", True)]
    assert len(check_methods(None, rope=True)) == 22 and image_methods()[11] == Method("none", True)  # 11 names


def result(scale: float, values: dict[str, list[float]]) -> ScaleResult:
    return ScaleResult(scale, (int(16 * scale), int(16 * scale)), 4, 1, [1.0, 1.2], values)


def test_the_picks_become_bands_halfway_between_the_scales_with_a_note():
    calibration = Calibration(
        [
            result(1.5, {"none": [5.0, 5.1], "pi": [3.0, 3.1]}),  # pi clears none
            result(2.0, {"none": [4.0, 5.0], "pi": [4.4, 5.0]}),  # none's mean is lower, within the spread
            result(3.0, {"none": [9.0, 9.5], "yarn+entropy": [2.0, 2.5]}),
        ],
        (16, 16),
        [2.0, 2.1],
        [1.0, 1.1],
        num=4,
        steps=2,
        seeds=2,
        guidance=2.0,
        source="photos/",
    )
    bands = check_default_extrapolation(calibration.bands, video=False)
    assert [(b["up_to_scale"], b["method"], b["entropy_scaling"]) for b in bands] == [
        (1.75, "pi", False),
        (2.5, "none", False),
        (None, "yarn", True),
    ]
    assert "clear of the runner-up none" in bands[0]["measured"] and "not clear" in bands[1]["measured"]
    assert "photos/" in bands[0]["measured"] and "24x24 (1.5x)" in bands[0]["measured"]
    assert [r.scale for r in calibration.unclear] == [2.0]
    table = calibration.table()
    assert "| pi |  | **3.0 [3.0, 3.1]** |" in table and "| real (floor) | 1.1 [1.0, 1.1] |" in table
    assert "NOT clear of the runner-up pi" in table


def test_calibrate_returns_the_table_and_sets_the_default():
    pipe = tiny_pipe()
    calibration = calibrate(
        pipe, pictures(8, 24), scales=[2], methods=["none", "pi+entropy"], num=2, steps=1, seeds=2, progress=False
    )
    assert set(calibration.scales[0].values) == {"none", "pi+entropy"}
    assert all(len(v) == 2 for v in calibration.scales[0].values.values())
    assert pipe.config.default_extrapolation == calibration.bands
    pick = Method.from_label(calibration.scales[0].best[0])
    assert pipe.resolve_extrapolation(16, 16) == pick.extrapolation()
    assert set(calibration.scales[0].pictures) == {"real", "none", "pi+entropy"}


def test_a_sincos_model_is_calibrated_over_none_only():
    pipe = tiny_pipe(position_encoding="sincos")
    calibration = calibrate(pipe, pictures(4, 16), scales=[2], num=2, steps=1, seeds=2, progress=False)
    assert set(calibration.scales[0].values) == {"none", "none+entropy"}


class Procedural:
    """The benchmark's references (its `procedural_references`) as a calibration takes them."""

    def __init__(self, module, kind: str):
        self.module, self.kind = module, kind

    def draw(self, size, seed: int, num: int) -> References:
        return self.module.procedural_references(self.kind, tuple(size), seed, num)


def test_the_benchmark_and_a_calibration_give_the_same_value_per_seed(tmp_path, monkeypatch):
    """The benchmark's image part, run on a tiny model, writes per-seed values that a calibration of the
    same model on the same (procedural) references reproduces exactly."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import extrapolation

    pipe = tiny_pipe(side=32, patch=4, classes=6)
    pipe.save_pretrained(tmp_path / "pipe")
    args = argparse.Namespace(
        out=tmp_path / "out",
        seeds=2,
        num=2,
        steps=1,
        guidance=2.0,
        quick=True,
        shapes_rope=str(tmp_path / "pipe"),
        shapes_sincos=str(tmp_path / "pipe"),
        methods=None,  # every method of the lists below (the benchmark's --methods)
    )
    monkeypatch.setattr(extrapolation, "ROPE_METHODS", [Method("pi"), Method("yarn", True)])  # two rows suffice
    monkeypatch.setattr(extrapolation, "SINCOS_METHODS", [])
    extrapolation.image_part("shapes", (48, 48), args)
    with open(tmp_path / "out" / "raw" / "shapes_48x48.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] == "rope" and r["metric"] == "swd_detail"]
    benchmark = {label: [float(r["value"]) for r in rows if r["method"] == label] for label in ("pi", "yarn+entropy")}
    calibration = measure(
        pipe,
        Procedural(extrapolation, "shapes"),
        scales=[1.5],
        methods=list(benchmark),
        num=2,
        steps=1,
        seeds=2,
        guidance=2.0,
        progress=False,
    )
    for label, values in benchmark.items():  # the CSV keeps 6 significant digits
        assert calibration.scales[0].values[label] == pytest.approx(values, rel=1e-5), label


def test_video_sizes_lengthen_the_clip_and_keep_the_frame():
    assert target_size((8, 32, 32), (2, 4, 4), 2) == (16, 32, 32)
    assert target_size((8, 32, 32), (1, 4, 4), 1.5) == (12, 32, 32)
    assert [m.label for m in check_methods(["riflex", "pi"], rope=True, video=True)] == ["riflex", "pi"]
    assert len(check_methods(None, rope=True, video=True)) == 20
    with pytest.raises(ValueError, match="image model"):
        check_methods(["riflex"], rope=True)


def test_a_size_that_is_not_square_records_its_aspect_in_the_band():
    square, wide = result(2.0, {"pi": [3.0, 3.1]}), ScaleResult(2.0, (16, 32), 4, 0, [1.0, 1.2], {"pi": [3.0, 3.1]})
    assert "aspect" not in Calibration([square], (8, 8), [2.0], [1.0], 4, 2, 2, 2.0).bands[0]
    assert Calibration([wide], (8, 16), [2.0], [1.0], 4, 2, 2, 2.0).bands[0]["aspect"] == 0.5


def test_without_references_the_reference_free_score_calibrates():
    from axialrope.pipelines.evaluation.calibrate import SELF

    pipe = tiny_pipe()
    calibration = calibrate(pipe, None, scales=[2], methods=["none", "pi"], num=1, steps=1, seeds=2, progress=False)
    assert calibration.reference == SELF
    scale = calibration.scales[0]
    assert scale.size == (16, 16) and all(len(v) == 2 for v in scale.values.values())
    assert scale.floor == calibration.trained and set(scale.parts) == {"none", "pi"}
    assert all(set(part) >= {"distance", "spectrum", "repetition", "penalty"} for part in scale.parts["pi"])
    assert set(scale.pictures) == {"own", "none", "pi"}
    assert pipe.config.default_extrapolation == calibration.bands
    assert "reference-free score" in calibration.bands[0]["measured"]
    assert "| own at 1x (floor) |" in calibration.table() and "Reference-free score" in calibration.table()
    written = calibration.to_dict()
    assert {key: written[key] for key in ("kind", "version", "reference", "trained_grid", "trained_size")} == {
        "kind": "axialrope-calibration",
        "version": 1,
        "reference": "self",
        "trained_grid": [4, 4],
        "trained_size": [8, 8],
    }
    assert written["default_extrapolation"] == calibration.bands and "parts" in written["scales"][0]


def test_the_reference_free_values_are_the_score_of_the_cells_samples():
    """Each value of a reference-free calibration is `self_reference_score` of that seed's samples against that
    seed's own samples of the model (`cells.own_reference`), both drawn again here."""
    from axialrope.pipelines.evaluation.cells import generate, own_reference
    from axialrope.pipelines.evaluation.self_reference import self_reference_score

    pipe = tiny_pipe()
    calibration = measure(pipe, None, scales=[1.5], methods=["yarn"], num=2, steps=1, seeds=2, progress=False)
    for seed in range(2):
        own = own_reference(pipe, seed, 2, 1, 2.0)
        assert own.own.shape == (8, 3, 8, 8) and own.labels.tolist() == [0, 1]
        samples = generate(pipe, Method("yarn"), own.labels, {"height": 12, "width": 12}, 1, 2.0, seed)
        expected = self_reference_score(samples, own.own, seed=seed).value
        assert calibration.scales[0].values["yarn"][seed] == pytest.approx(expected, rel=1e-6)


def test_a_calibration_on_real_images_says_so_in_its_json():
    calibration = calibrate(tiny_pipe(), pictures(4, 16), scales=[2], methods=["pi"], num=2, steps=1, seeds=2)
    written = calibration.to_dict()
    assert (written["kind"], written["version"], written["reference"]) == ("axialrope-calibration", 1, "real")
    assert written["trained_grid"] == [4, 4] and "parts" not in written["scales"][0]


def test_a_video_model_is_calibrated_in_time_without_references():
    torch.manual_seed(0)
    model = create_dit(
        "tiny", sample_size=8, num_frames=4, temporal_patch_size=2, patch_size=2, in_channels=3, num_classes=0
    ).eval()
    pipe = AxialDiTPipeline.from_model(model)
    pipe.set_progress_bar_config(disable=True)
    calibration = calibrate(pipe, None, scales=[2], methods=["riflex"], num=1, steps=1, seeds=2, progress=False)
    assert calibration.scales[0].size == (8, 8, 8) and set(calibration.scales[0].values) == {"riflex"}
    assert calibration.to_dict()["trained_grid"] == [2, 4, 4]
    assert all(part["loop"] is not None for part in calibration.scales[0].parts["riflex"])
    assert calibration.scales[0].pictures["riflex"].shape == (1, 3, 8, 8)  # the last frames
    assert pipe.resolve_extrapolation(num_frames=8) == Method.from_label(calibration.scales[0].best[0]).extrapolation()


def test_the_agreement_benchmark_scores_with_the_cells_of_a_calibration(tmp_path, monkeypatch):
    """benchmarks/self_reference_agreement.py's reference-free values are `self_reference_score` of the
    benchmark's cell samples against `cells.own_reference`, the model's own samples a calibration draws, and its
    real values are the benchmark's detail SWD of the same samples."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import self_reference_agreement as agreement

    from axialrope.pipelines.evaluation.cells import measure_cell, own_reference
    from axialrope.pipelines.evaluation.self_reference import self_reference_score

    pipe = tiny_pipe(side=32, patch=4, classes=6)
    pipe.save_pretrained(tmp_path / "pipe")
    args = argparse.Namespace(
        out=tmp_path / "out", seeds=2, first_seed=0, num=2, own=2, steps=1, guidance=2.0,
        model_of={"shapes": str(tmp_path / "pipe")},
    )  # fmt: skip
    monkeypatch.setattr(agreement, "ROPE_METHODS", [Method("pi")])
    agreement.run_part("shapes:48x48", args)
    with open(tmp_path / "out" / "raw" / "shapes_48x48.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["method"] == "pi"]
    written = {metric: [float(r["value"]) for r in rows if r["metric"] == metric] for metric in ("self", "real")}
    for seed in range(2):
        references = agreement.procedural_references("shapes", (48, 48), seed, 2)
        cell = measure_cell(pipe, Method("pi"), references, 1, 2.0, seed)
        own = own_reference(pipe, seed, 2, 1, 2.0, factor=2).own
        assert written["self"][seed] == pytest.approx(
            self_reference_score(cell.samples, own, seed=seed).value, rel=1e-5
        )
        assert written["real"][seed] == pytest.approx(cell.distance.detail, rel=1e-5)
