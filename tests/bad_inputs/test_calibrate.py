"""Bad inputs of calibration: `axialrope calibrate`, `axialrope.pipelines.calibrate` and `axialrope train
--calibrate-scales`.
Each is refused before any work, and the run is left as it was."""

import pytest
import torch

from axialrope.pipelines import calibrate as calibrate_pipe  # `calibrate` here builds the CLI's arguments
from axialrope.pipelines.evaluation.references import ReferenceImages

from .conftest import RUN, flags

QUICK = ["--num", "2", "--steps", "1", "--seeds", "2"]
FOLDER_RUN = {name: value for name, value in RUN.items() if name != "dataset_size"}  # a folder sets its own size


def photos(k, side: int = 48, count: int = 4, folder: str = "photos"):
    """A flat folder of `count` side x side PNG files in the case's folder."""
    for index in range(count):
        k.write(f"{folder}/{index}.png", k.png(side, side))
    return str(k.tmp / folder)


def calibrate(k, *extra: str, reference: bool = True) -> list[str]:
    """`axialrope calibrate` on a copy of the tiny run (trained at 16x16 on shapes) with a folder of photos."""
    run = k.run()
    return ["calibrate", "--model", str(run), *(["--reference-dir", photos(k)] if reference else []), *QUICK, *extra]


def tiny_pipe():
    from axialrope.models import create_dit
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    torch.manual_seed(0)
    return AxialDiTPipeline.from_model(create_dit("tiny", sample_size=8, in_channels=3, num_classes=2).eval())


CLI_CASES = [
    pytest.param(lambda k: calibrate(k, reference=False), "--reference-dir", id="procedural-run-needs-a-folder"),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.run()), "--reference-dir", str(k.tmp / "nowhere"), *QUICK],
        "--reference-dir",
        id="reference-dir-missing",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.run()), "--reference-dir", photos(k, side=20), *QUICK],
        "too small",
        id="references-too-small-for-a-scale",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.run()), "--reference-dir", photos(k, count=1), *QUICK],
        "at least 2",
        id="one-reference-image",
    ),
    pytest.param(
        lambda k: (
            k.write("empty/notes.txt", "no images"),
            ["calibrate", "--model", str(k.run()), "--reference-dir", str(k.tmp / "empty")],
        )[-1],
        "--reference-dir",
        id="reference-dir-without-images",
    ),
    pytest.param(lambda k: calibrate(k, "--scales", "1"), "--scales", id="scale-not-above-1"),
    pytest.param(lambda k: calibrate(k, "--scales", "nan"), "--scales", id="scale-nan"),
    pytest.param(lambda k: calibrate(k, "--scales", "100"), "--scales", id="scale-too-large"),
    pytest.param(lambda k: calibrate(k, "--methods", "riflex"), "riflex", id="method-for-video"),
    pytest.param(lambda k: calibrate(k, "--methods", "pi", "bogus"), "bogus", id="method-unknown"),
    pytest.param(lambda k: calibrate(k, "--methods", "auto"), "auto", id="method-auto"),
    pytest.param(lambda k: calibrate(k, "--seeds", "1"), "--seeds", id="one-seed"),
    pytest.param(lambda k: calibrate(k, "--num", "0"), "--num", id="num-zero"),
    pytest.param(lambda k: calibrate(k, "--steps", "0"), "--steps", id="steps-zero"),
    pytest.param(lambda k: calibrate(k, "--guidance", "inf"), "guidance", id="guidance-infinite"),
    # 2 MiB: the tiny run's weights fit, its samples do not
    pytest.param(
        lambda k: (argv := calibrate(k), k.limit_memory(2e-3), argv)[-1], "--num", id="does-not-fit-in-memory"
    ),
    pytest.param(
        lambda k: (k.write("file", "x"), calibrate(k, "--out", str(k.tmp / "file" / "sub")))[-1],
        "--out",
        id="out-under-a-file",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.tmp / "nowhere"), *QUICK], "no such folder", id="model-missing"
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.model_folder()), "--reference-dir", photos(k)],
        "neither",
        id="model-a-bare-dit-folder",
    ),
    pytest.param(
        lambda k: (
            run := k.run(),
            k.lock(run),
            ["calibrate", "--model", str(run), "--reference-dir", photos(k), *QUICK],
        )[-1],
        "in use",
        id="run-in-use",
    ),
    # training: refused before it starts
    pytest.param(
        lambda k: ["train", "--output-dir", str(k.tmp / "new"), *flags(RUN), "--calibrate-scales", "2"],
        "image_folder",
        id="train-calibrate-on-procedural-data",
    ),
    pytest.param(
        lambda k: [
            "train",
            "--output-dir",
            str(k.tmp / "new"),
            *flags(FOLDER_RUN),
            "--data",
            "image_folder",
            "--data-dir",
            photos(k, side=16, count=4),
            "--calibrate-scales",
            "2",
        ],
        "calibrate_scales",
        id="train-calibrate-data-too-small",
    ),
    pytest.param(
        lambda k: ["train", "--output-dir", str(k.tmp / "new"), *flags(RUN), "--calibrate-scales", "0.5"],
        "calibrate_scales",
        id="train-calibrate-scale-below-1",
    ),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_calibration_is_refused_before_work_and_leaves_the_run(expect_usage_error, make, word):
    expect_usage_error(make, word)


CASES = [
    (
        "pipe-calibrate-references-not-images",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), "not a folder", scales=[2]),
        FileNotFoundError,
        "reference_images",
    ),
    (
        "pipe-calibrate-references-of-ints",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), torch.zeros(4, 3, 16, 16, dtype=torch.uint8)),
        ValueError,
        "float",
    ),
    (
        "pipe-calibrate-references-out-of-range",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), torch.full((4, 3, 16, 16), 255.0)),
        ValueError,
        "[0, 1]",
    ),
    ("pipe-calibrate-references-of-a-number", lambda k: lambda: calibrate_pipe(tiny_pipe(), 3), TypeError, "folder"),
    (
        "pipe-calibrate-scale-a-number",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), torch.rand(4, 3, 16, 16), scales=2),
        ValueError,
        "scales",
    ),
    (
        "pipe-calibrate-labels-wrong-count",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), torch.rand(4, 3, 16, 16), class_labels=[0, 1]),
        ValueError,
        "labels",
    ),
    (
        "references-too-small",
        lambda k: lambda: ReferenceImages(torch.rand(4, 3, 8, 8)).check([(16, 16)]),
        ValueError,
        "16x16",
    ),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_a_bad_calibration_call_raises_a_clear_error(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)
