"""Bad inputs of calibration: `axialrope calibrate`, `axialrope.pipelines.calibrate` and `axialrope train
--calibrate-scales`.
Each is refused before any work, and the run is left as it was."""

import pytest
import torch

from axialrope.pipelines import calibrate as calibrate_pipe  # `calibrate` here builds the CLI's arguments
from axialrope.pipelines.cli.interrupts import Terminated
from axialrope.pipelines.evaluation import calibrate as calibration
from axialrope.pipelines.evaluation.references import ReferenceImages

from .conftest import NOT_UTF8, RUN, flags, photo_folder, snapshot

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


def calibrate_run(k, run, *extra: str) -> list[str]:
    """`axialrope calibrate` on the run `run` with a folder of photos."""
    return ["calibrate", "--model", str(run), "--reference-dir", photos(k), *QUICK, *extra]


def retarget(run, folder):
    """The run's config.yaml naming `folder` as its data_dir (its data.json still names what it read)."""
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    (run / "config.yaml").write_text(yaml.safe_dump({**config, "data_dir": str(folder)}, sort_keys=False))
    return run


def tiny_pipe():
    from axialrope.models import create_dit
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    torch.manual_seed(0)
    return AxialDiTPipeline.from_model(create_dit("tiny", sample_size=8, in_channels=3, num_classes=2).eval())


def tiny_video_pipe():
    from axialrope.models import create_dit
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    torch.manual_seed(0)
    model = create_dit("tiny", sample_size=8, num_frames=4, temporal_patch_size=2, in_channels=3, num_classes=2)
    return AxialDiTPipeline.from_model(model.eval())


def video_folder(k):
    """A tiny video model's pipeline folder in the case's folder."""
    tiny_video_pipe().save_pretrained(k.tmp / "video")
    return str(k.tmp / "video")


CLI_CASES = [
    # a run of procedural data is calibrated without real images, after the same checks
    pytest.param(lambda k: calibrate(k, "--scales", "1", reference=False), "--scales", id="self-scale-not-above-1"),
    pytest.param(lambda k: calibrate(k, "--methods", "riflex", reference=False), "riflex", id="self-method-for-video"),
    pytest.param(lambda k: calibrate(k, "--seeds", "1", reference=False), "--seeds", id="self-one-seed"),
    pytest.param(
        lambda k: (argv := calibrate(k, reference=False), k.limit_memory(2e-3), argv)[-1],
        "--num",
        id="self-does-not-fit-in-memory",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", video_folder(k), "--reference-dir", photos(k), *QUICK],
        "--reference-dir",
        id="video-with-reference-dir",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", video_folder(k), "--scales", "1.1", *QUICK],
        "the trained size",
        id="video-scale-rounding-to-the-trained-frames",
    ),
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
    pytest.param(
        lambda k: calibrate(k, "--scales", "1.01"), "the trained size", id="scale-rounding-to-the-trained-size"
    ),
    pytest.param(
        lambda k: calibrate(k, "--scales", "1.5", "1.51"), "both round to 24x24", id="scales-rounding-to-one-size"
    ),
    pytest.param(lambda k: calibrate(k, "--out", ""), "--out", id="out-empty"),
    pytest.param(
        lambda k: calibrate(k, "--out", str(k.tmp / "photos" / "results")),
        "inside --reference-dir",
        id="out-in-the-data",
    ),
    pytest.param(
        lambda k: ["calibrate", "--model", str(k.run()), "--reference-dir", photos(k, folder=NOT_UTF8), *QUICK],
        "not valid UTF-8",
        id="reference-dir-not-utf8",
    ),
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
    pytest.param(
        lambda k: (
            argv := calibrate(k, "--out", str(k.tmp / "results")),
            k.hold_results(k.tmp / "results"),
            argv,
        )[-1],
        "another axialrope command is writing",
        id="results-written-by-another-calibration",
    ),
    pytest.param(
        lambda k: (run := k.run(), k.read_only(run / "pipeline-config"), calibrate_run(k, run))[-1],
        "pipeline-config",  # found before the work: never the default in pipeline/ and not in pipeline-config/
        id="pipeline-config-not-writable",
    ),
    pytest.param(
        lambda k: (
            run := k.folder_run(),
            retarget(run, photo_folder(k.tmp / "elsewhere", seed=1)),
            ["calibrate", "--model", str(run), *QUICK, "--scales", "2"],
        )[-1],
        "holds other files",  # the run's training folder now holds other images: named, with the run's
        id="run-training-folder-holds-other-data",
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
    pytest.param(
        lambda k: [
            "train",
            "--output-dir",
            str(k.tmp / "new"),
            *flags(FOLDER_RUN),
            "--data",
            "image_folder",
            "--data-dir",
            photos(k),
            "--calibrate-scales",
            "1.01",
        ],
        "the trained size",
        id="train-calibrate-scale-rounding-to-the-trained-size",
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
        "pipe-calibrate-folder-with-labels",  # a folder's classes are its class folders: the labels went unused
        lambda k: (f := photos(k), lambda: calibrate_pipe(tiny_pipe(), f, class_labels=[0, 1, 0, 1]))[-1],
        ValueError,
        "class folders",
    ),
    (
        "pipe-calibrate-labels-without-references",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), None, scales=[2], class_labels=[0, 1]),
        ValueError,
        "class_labels",
    ),
    (
        "pipe-calibrate-self-scale-not-above-1",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), None, scales=[0.5]),
        ValueError,
        "scales",
    ),
    (
        "pipe-calibrate-self-one-seed",
        lambda k: lambda: calibrate_pipe(tiny_pipe(), None, scales=[2], seeds=1),
        ValueError,
        "seeds",
    ),
    (
        "pipe-calibrate-video-with-references",
        lambda k: lambda: calibrate_pipe(tiny_video_pipe(), torch.rand(4, 3, 16, 16), scales=[2]),
        ValueError,
        "reference_images",
    ),
    (
        "pipe-calibrate-video-method-unknown",
        lambda k: lambda: calibrate_pipe(tiny_video_pipe(), None, scales=[2], methods=["bogus"]),
        ValueError,
        "methods",
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


# pytest.param(make(kit) -> argv, exit code, a word of the output, the paths that may change, id=...)
RUN_CASES = [
    pytest.param(
        lambda k: (argv := calibrate(k), k.interrupt(calibration, "measure_cell"), argv)[-1],
        130,
        "stopped by Ctrl-C; nothing was recorded",
        (),
        id="ctrl-c-while-measuring",
    ),
    pytest.param(
        lambda k: (argv := calibrate(k), k.interrupt(calibration, "measure_cell", Terminated, calls=2), argv)[-1],
        143,
        "default_extrapolation and its calibration results are as they were",
        (),
        id="sigterm-while-measuring",
    ),
    pytest.param(
        lambda k: (
            argv := calibrate(k, "--methods", "none", "pi", "--scales", "2"),
            fail_replacing(k, "pipeline-config"),
            argv,
        )[-1],
        1,
        "nothing was recorded",  # pipeline/ had its new default already: put back, and no results published
        (),
        id="pipeline-config-full-when-recording",
    ),
]


@pytest.mark.parametrize("make, code, word, may_change", RUN_CASES)
def test_a_calibration_stopped_or_failing_records_nothing(expect_run_outcome, make, code, word, may_change):
    expect_run_outcome(make, code, word, may_change)


def fail_replacing(k, folder: str) -> None:
    """Replacing the model_index.json of a folder named `folder` fails as on a full disk."""
    import errno
    import os
    from pathlib import Path

    real = os.replace

    def replace(source, target):
        if Path(target).name == "model_index.json" and Path(target).parent.name == folder:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))
        return real(source, target)

    k._request.getfixturevalue("monkeypatch").setattr(os, "replace", replace)


@pytest.mark.slow  # two calibrations
def test_a_second_calibration_replaces_the_whole_first(kit, monkeypatch, capsys):
    """Its picks (said, not silent) and every file of the first's results: no picture of a size the new report
    does not describe stays beside it."""
    from axialrope.pipelines.cli import main

    run = kit.run()
    monkeypatch.chdir(kit.tmp)
    assert main(calibrate_run(kit, run, "--scales", "2", "3", "--methods", "none", "pi")) == 0
    first = sorted(p.name for p in (run / "calibration").iterdir())
    assert first == ["calibration-32x32.png", "calibration-48x48.png", "calibration.json", "calibration.md"]
    capsys.readouterr()
    assert main(calibrate_run(kit, run, "--scales", "1.5", "--methods", "none", "pi")) == 0
    assert "replacing the 2 bands of an earlier calibration" in capsys.readouterr().out
    assert sorted(p.name for p in (run / "calibration").iterdir()) == [
        "calibration-24x24.png",
        "calibration.json",
        "calibration.md",
    ]
    assert snapshot(run / "calibration").keys() == {"calibration-24x24.png", "calibration.json", "calibration.md"}
