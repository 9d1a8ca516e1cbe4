"""Bad inputs of sampling: model and pipeline folders, the pipeline's call, output paths, devices, and
`axialrope sample` / `axialrope compare`."""

import json
import math
import os
from pathlib import Path

import pytest
import torch

from axialrope.models import DiT
from axialrope.pipelines.cli.interrupts import Terminated
from axialrope.pipelines.cli.preflight import check_device
from axialrope.pipelines.dit.bundled import load_dit, load_pipeline
from axialrope.pipelines.memory import check_sampling_memory
from axialrope.pipelines.objectives import make_objective, sample
from axialrope.pipelines.paths import check_free_space, check_output_file, check_output_folder

from .conftest import BEYOND_A_FLOAT, NOT_UTF8, snapshot

NEEDS_NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")


def nan_weights_pipe(k):
    """A tiny DiT pipeline with one NaN weight: its samples cannot be finite."""
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    model = k.dit()
    with torch.no_grad():
        next(model.parameters()).fill_(math.nan)
    pipe = AxialDiTPipeline.from_model(model)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def deep_run_config(run):
    """A training run whose configs claim depth 10^8: its recorded architecture (pipeline-config/transformer/,
    which its checkpoints load in), its model/ and its pipeline/."""
    for config in (
        run / "pipeline-config" / "transformer" / "config.json",
        run / "model" / "config.json",
        run / "pipeline" / "transformer" / "config.json",
    ):
        config.write_text(json.dumps({**json.loads(config.read_text()), "depth": 10**8}))
    return run


def class_ids(k, names: list[str] | None, texts: tuple[str, ...]):
    """The call: the class ids that `--classes *texts` samples with a tiny pipeline of classes `names`."""
    from axialrope.pipelines.cli.sample import class_label
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    pipe = AxialDiTPipeline.from_model(k.dit(num_classes=3), class_names=names)
    return lambda: [pipe.class_id(class_label(pipe, text)) for text in texts]


def band(up_to_scale, method="pi", entropy_scaling=False) -> dict:
    """One band of an AxialDiTPipeline's default_extrapolation."""
    return {"up_to_scale": up_to_scale, "method": method, "entropy_scaling": entropy_scaling}


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    # model and pipeline folders
    (
        "load-dit-truncated-weights",
        lambda k: (f := k.model_folder(), k.truncate(k.weights_file(f)), lambda: load_dit(f))[-1],
        ValueError,
        "truncated",
    ),
    (
        "load-dit-corrupt-weights",
        lambda k: (
            f := k.model_folder(),
            k.weights_file(f).write_bytes(b"\x08" + b"\x00" * 7 + b"{]"),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "corrupt",
    ),
    (
        "load-dit-malformed-config",
        lambda k: (f := k.model_folder(), k.write("model/config.json", "{depth: 2"), lambda: load_dit(f))[-1],
        ValueError,
        "JSON",
    ),
    (
        "load-dit-config-depth-disagrees",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", depth=1), lambda: load_dit(f))[-1],
        ValueError,
        "depth",
    ),
    (
        "load-dit-config-deeper-than-weights",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", depth=4), lambda: load_dit(f))[-1],
        ValueError,
        "depth",
    ),
    (
        "load-dit-config-width-disagrees",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", hidden_size=32), lambda: load_dit(f))[-1],
        ValueError,
        "shape",
    ),
    (
        "load-dit-config-classes-disagree",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", num_classes=5), lambda: load_dit(f))[-1],
        ValueError,
        "config.json",
    ),
    (
        "load-dit-config-invalid",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", patch_size=0), lambda: load_dit(f))[-1],
        ValueError,
        "valid DiT",
    ),
    (
        "load-dit-pickle-weights-only",
        lambda k: (f := k.model_folder(), k.weights_file(f).rename(f / "model.bin"), lambda: load_dit(f))[-1],
        ValueError,
        "pickle",
    ),
    (
        "from-pretrained-with-use-safetensors-refuses-a-bin",
        lambda k: (
            f := k.model_folder(),
            k.weights_file(f).rename(f / "diffusion_pytorch_model.bin"),
            lambda: DiT.from_pretrained(f, use_safetensors=True),
        )[-1],
        OSError,
        "safetensors",
    ),
    (
        "load-dit-other-class",
        lambda k: (
            f := k.model_folder(),
            k.edit_json(f / "config.json", _class_name="UNet2DModel"),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "DiT",
    ),
    (
        "load-pipeline-malformed-index",
        lambda k: (
            f := k.pipeline_folder(),
            k.write("pipe/model_index.json", "{"),
            lambda: load_pipeline(str(f), "cpu"),
        )[-1],
        ValueError,
        "JSON",
    ),
    (
        "load-pipeline-foreign-transformer",
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "model_index.json", transformer=["os", "system"]),
            lambda: load_pipeline(str(f), "cpu"),
        )[-1],
        ValueError,
        "axialrope",
    ),
    (
        "load-pipeline-truncated-transformer",
        lambda k: (
            f := k.pipeline_folder(),
            k.truncate(k.weights_file(f / "transformer")),
            lambda: load_pipeline(str(f), "cpu"),
        )[-1],
        ValueError,
        "truncated",
    ),
    (
        "load-pipeline-malformed-scheduler",
        lambda k: (
            f := k.pipeline_folder(),
            k.write("pipe/scheduler/scheduler_config.json", "]"),
            lambda: load_pipeline(str(f), "cpu"),
        )[-1],
        ValueError,
        "JSON",
    ),
    (
        "load-pipeline-bad-default-extrapolation",
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "model_index.json", default_extrapolation=[band(None, "yarnn")]),
            lambda: load_pipeline(str(f), "cpu"),
        )[-1],
        ValueError,
        "default_extrapolation",
    ),
    (
        "load-dit-weights-with-a-sparse-84-gib-tail",
        lambda k: (f := k.model_folder(), k.sparse_tail(k.weights_file(f), 84), lambda: load_dit(f))[-1],
        ValueError,
        "longer than its tensors",
    ),
    (
        "load-dit-weights-larger-than-memory",
        lambda k: (
            f := k.model_folder(),
            k.claimed_weights(k.weights_file(f), 84),
            k.limit_memory(8),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "GiB",
    ),
    (
        "load-dit-header-longer-than-the-file",
        lambda k: (
            f := k.model_folder(),
            k.weights_file(f).write_bytes((1 << 40).to_bytes(8, "little") + b"{}"),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "truncated or corrupt",
    ),
    (
        "load-dit-config-depth-1e8",
        lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", depth=10**8), lambda: load_dit(f))[-1],
        ValueError,
        "depth 100000000",
    ),
    (
        "load-dit-config-of-2-mib",
        lambda k: (
            f := k.model_folder(),
            k.write("model/config.json", "{" + " " * (2 << 20) + "}"),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "bytes",
    ),
    (
        "load-dit-config-nested-too-deeply",
        lambda k: (
            f := k.model_folder(),
            k.write("model/config.json", "[" * 100_000 + "]" * 100_000),
            lambda: load_dit(f),
        )[-1],
        ValueError,
        "nested too deeply",
    ),
    # the pipeline's call and its pre-flight
    (
        "sample-negative-guidance",
        lambda k: (
            lambda: sample(k.dit(), make_objective("flow"), torch.zeros(1, 3, 8, 8), torch.tensor([0]), 1, -1.0, 2)
        ),
        ValueError,
        "guidance_scale",
    ),
    (
        "pipeline-negative-guidance",
        lambda k: lambda: k.pipe(class_labels=[0], guidance_scale=-2.0, num_inference_steps=1),
        ValueError,
        "guidance_scale",
    ),
    (
        "pipeline-nan-guidance",
        lambda k: lambda: k.pipe(class_labels=[0], guidance_scale=math.nan),
        ValueError,
        "guidance",
    ),
    (
        "pipeline-inf-guidance",
        lambda k: lambda: k.pipe(class_labels=[0], guidance_scale=math.inf),
        ValueError,
        "guidance_scale",
    ),
    (
        "pipeline-guidance-1e30",
        lambda k: lambda: k.pipe(class_labels=[0], guidance_scale=1e30),
        ValueError,
        "guidance_scale",
    ),
    (
        "pipeline-guidance-1000",
        lambda k: lambda: k.pipe(class_labels=[0], guidance_scale=1000.0),
        ValueError,
        "guidance_scale",
    ),
    (
        "pipeline-nan-latents",
        lambda k: lambda: k.pipe(class_labels=[0], latents=torch.full((1, 3, 32, 32), math.nan)),
        ValueError,
        "latents must be finite",
    ),
    (
        "pipeline-inf-latents",
        lambda k: lambda: k.pipe(class_labels=[0], latents=torch.full((1, 3, 32, 32), math.inf)),
        ValueError,
        "latents must be finite",
    ),
    (
        "pipeline-callback-nan-latents",
        lambda k: (
            lambda: k.pipe(
                class_labels=[0],
                num_inference_steps=1,
                callback_on_step_end=lambda pipe, i, ts, kw: {"latents": torch.full_like(kw["latents"], math.nan)},
            )
        ),
        ValueError,
        "not finite",
    ),
    (
        "pipeline-nan-weights",
        lambda k: (q := nan_weights_pipe(k), lambda: q(class_labels=[0], num_inference_steps=1))[-1],
        ValueError,
        "not finite",
    ),
    (
        "pipeline-extrapolation-unknown-with-entropy",
        lambda k: lambda: k.pipe(class_labels=[0], extrapolation="yarnn+entropy"),
        ValueError,
        "method",
    ),
    (
        "pipeline-extrapolation-entropy-alone",
        lambda k: lambda: k.pipe(class_labels=[0], extrapolation="+entropy"),
        ValueError,
        "method",
    ),
    (
        "default-extrapolation-not-a-list",
        lambda k: lambda: k.pipe.set_default_extrapolation("pi"),
        TypeError,
        "default_extrapolation",
    ),
    (
        "default-extrapolation-unknown-method",
        lambda k: lambda: k.pipe.set_default_extrapolation([band(None, "dype")]),
        ValueError,
        "default_extrapolation band 0",
    ),
    (
        "default-extrapolation-decreasing",
        lambda k: lambda: k.pipe.set_default_extrapolation([band(3.0), band(2.0)]),
        ValueError,
        "must increase",
    ),
    (
        "default-extrapolation-zero-scale",
        lambda k: lambda: k.pipe.set_default_extrapolation([band(0.0)]),
        ValueError,
        "up_to_scale",
    ),
    (
        "sampling-memory-huge",
        lambda k: lambda: check_sampling_memory(k.pipe.transformer, 4, (1 << 16, 1 << 16), True, "cpu"),
        ValueError,
        "GiB",
    ),
    # output paths and devices
    ("out-is-a-folder", lambda k: lambda: check_output_file(k.tmp, "--out"), ValueError, "folder"),
    (
        "out-under-a-file",
        lambda k: (k.write("f", "x"), lambda: check_output_file(k.tmp / "f" / "x.png", "--out"))[-1],
        ValueError,
        "is a file",
    ),
    (
        "output-folder-under-a-file",
        lambda k: (k.write("f", "x"), lambda: check_output_folder(k.tmp / "f" / "a" / "b", "--output-dir"))[-1],
        ValueError,
        "is a file",
    ),
    (
        "out-a-fifo",
        lambda k: (os.mkfifo(k.tmp / "f.png"), lambda: check_output_file(k.tmp / "f.png", "--out"))[-1],
        ValueError,
        "not a regular file",
    ),
    (
        "out-name-too-long",
        lambda k: lambda: check_output_file(k.tmp / ("x" * 300 + ".png"), "--out"),
        ValueError,
        "this file system allows",
    ),
    (
        "out-path-too-long",
        lambda k: lambda: check_output_file(k.tmp.joinpath(*["d" * 200] * 25, "x.png"), "--out"),
        ValueError,
        "longer than",
    ),
    (
        "out-on-a-full-disk",
        lambda k: (k.limit_disk(0.5), lambda: check_free_space(k.tmp / "x.png", 1 << 20, "--out", "the samples"))[-1],
        ValueError,
        "MiB free",
    ),
    ("device-unknown", lambda k: lambda: check_device("tpu"), ValueError, "--device"),
    ("device-garbage", lambda k: lambda: check_device("cuda:x"), ValueError, "--device"),
    ("device-cuda-without-gpu", lambda k: lambda: check_device("cuda"), ValueError, "CUDA", NEEDS_NO_GPU),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)


# (id, make(kit) -> the call, holds(its result))
HANDLED = [
    (
        "classes-named-by-numbers",  # folders "1", "2", "3": --classes 1 is the class "1" (id 0); "0" is no name
        lambda k: class_ids(k, ["1", "2", "3"], ("1", "3", "0")),
        lambda ids: ids == [0, 2, 0],
    ),
    (
        "classes-by-name-or-id",
        lambda k: class_ids(k, ["circle", "ring", "cross"], ("ring", "2")),
        lambda ids: ids == [1, 2],
    ),
    (
        "pipeline-extrapolation-with-entropy",  # the names the CLI takes
        lambda k: (
            lambda: (
                k.pipe(
                    class_labels=[0],
                    height=48,
                    width=48,
                    num_inference_steps=1,
                    output_type="pt",
                    extrapolation="yarn+entropy",
                ).images
            )
        ),
        lambda images: images.shape == (1, 3, 48, 48) and bool(torch.isfinite(images).all()),
    ),
]


@pytest.mark.parametrize("make, holds", [pytest.param(*case[1:], id=case[0]) for case in HANDLED])
def test_an_input_that_must_be_taken_is_taken_right_and_writes_nothing(expect_handled, make, holds):
    expect_handled(make, holds)


# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(lambda k: ["sample", "--device", "cuda"], "CUDA", id="sample-cuda-without-gpu", marks=NEEDS_NO_GPU),
    pytest.param(lambda k: ["compare", "--device", "cuda"], "CUDA", id="compare-cuda-without-gpu", marks=NEEDS_NO_GPU),
    pytest.param(lambda k: ["sample", "--device", "quantum"], "--device", id="sample-unknown-device"),
    pytest.param(
        lambda k: (k.write("f", "x"), ["sample", "--out", str(k.tmp / "f" / "x.png")])[-1],
        "is a file",
        id="sample-out-under-a-file",
    ),
    pytest.param(
        lambda k: ((k.tmp / "d").mkdir(), ["sample", "--out", str(k.tmp / "d")])[-1], "folder", id="sample-out-a-folder"
    ),
    pytest.param(
        lambda k: (k.write("f", "x"), ["compare", "--out", str(k.tmp / "f" / "c.png")])[-1],
        "is a file",
        id="compare-out-under-a-file",
    ),
    pytest.param(lambda k: ["sample", "--height", "65536", "--width", "65536"], "GiB", id="sample-huge-size"),
    pytest.param(
        lambda k: ["compare", "--height", "65536", "--width", "65536", "--methods", "none"],
        "GiB",
        id="compare-huge-size",
    ),
    pytest.param(lambda k: ["sample", "--guidance", "-1"], "--guidance", id="sample-negative-guidance"),
    pytest.param(lambda k: ["sample", "--guidance", "nan"], "--guidance", id="sample-nan-guidance"),
    pytest.param(lambda k: ["compare", "--guidance", "-2"], "--guidance", id="compare-negative-guidance"),
    pytest.param(lambda k: ["sample", "--steps", "0"], "--steps", id="sample-zero-steps"),
    pytest.param(lambda k: ["sample", "--fps", "0"], "--fps", id="sample-zero-fps"),
    pytest.param(lambda k: ["sample", "--height", "-8"], "--height", id="sample-negative-height"),
    pytest.param(lambda k: ["sample", "--height", BEYOND_A_FLOAT], "--height", id="sample-height-4e400"),
    pytest.param(
        lambda k: ["sample", "--model", "moving-shapes-rope", "--frames", BEYOND_A_FLOAT],
        "--frames",
        id="sample-frames-4e400",
    ),
    pytest.param(lambda k: ["sample", "--num", BEYOND_A_FLOAT], "--num", id="sample-num-4e400"),
    pytest.param(lambda k: ["sample", "--seed", BEYOND_A_FLOAT], "--seed", id="sample-seed-4e400"),
    pytest.param(lambda k: ["compare", "--width", BEYOND_A_FLOAT], "--width", id="compare-width-4e400"),
    pytest.param(
        lambda k: ["sample", "--out", os.path.join(NOT_UTF8, "x.png")], "not valid UTF-8", id="sample-out-not-utf8"
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.weights_file(f / "transformer").rename(f / "transformer" / "diffusion_pytorch_model.bin"),
            ["sample", "--model", str(f)],
        )[-1],
        "pickle",
        id="sample-pickle-weights-only",
    ),
    pytest.param(lambda k: ["sample", "--guidance", "1e30"], "--guidance", id="sample-guidance-1e30"),
    pytest.param(lambda k: ["compare", "--guidance", "1e30"], "--guidance", id="compare-guidance-1e30"),
    pytest.param(lambda k: ["sample", "--guidance", "inf"], "--guidance", id="sample-guidance-inf"),
    pytest.param(lambda k: ["sample", "--fps", "0.001"], "--fps", id="sample-fps-0.001"),
    pytest.param(lambda k: ["sample", "--fps", "1e6"], "--fps", id="sample-fps-1e6"),
    pytest.param(lambda k: (k.limit_memory(8), ["sample", "--num", "4000"])[-1], "at most --num", id="sample-num-4000"),
    pytest.param(
        lambda k: (k.limit_memory(8), ["compare", "--num", "4000", "--methods", "none"])[-1],
        "at most --num",
        id="compare-num-4000",
    ),
    pytest.param(
        lambda k: (k.limit_memory(8), ["sample", "--steps", "1000000000"])[-1], "at most --steps", id="sample-steps-1e9"
    ),
    pytest.param(lambda k: (k.limit_disk(0.01), ["sample"])[-1], "MiB free", id="sample-on-a-full-disk"),
    pytest.param(
        lambda k: ((k.tmp / "outputs").mkdir(), ["sample", "--model", "outputs/typo"])[-1],
        "no such folder",
        id="sample-mistyped-local-model",
    ),
    pytest.param(lambda k: ["sample", "--model", "./typo"], "no such folder", id="sample-dot-path-model"),
    pytest.param(
        lambda k: ["sample", "--model", "shapes-rop"], "did you mean 'shapes-rope'", id="sample-mistyped-bundled-name"
    ),
    pytest.param(
        lambda k: ((k.tmp / "outputs").mkdir(), ["compare", "--model", "outputs/typo"])[-1],
        "no such folder",
        id="compare-mistyped-local-model",
    ),
    pytest.param(
        lambda k: (os.mkfifo(k.tmp / "f.png"), ["sample", "--out", str(k.tmp / "f.png")])[-1],
        "not a regular file",
        id="sample-out-a-fifo",
    ),
    pytest.param(
        lambda k: ["sample", "--out", "x" * 300 + ".png"], "this file system allows", id="sample-out-too-long"
    ),
    pytest.param(
        lambda k: ["sample", "--model", "moving-shapes-rope", "--out", "x" * 250 + ".gif"],
        "this file system allows",
        id="sample-video-out-too-long-for-its-frames-folder",
    ),
    pytest.param(lambda k: ["sample", "--classes", "\u0663"], "unknown class", id="sample-class-a-non-ascii-digit"),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.sparse_tail(k.weights_file(f / "transformer"), 84),
            ["sample", "--model", str(f)],
        )[-1],
        "longer than its tensors",
        id="sample-weights-with-a-sparse-84-gib-tail",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "transformer" / "config.json", depth=10**8),
            ["sample", "--model", str(f)],
        )[-1],
        "depth 100000000",
        id="sample-config-depth-1e8",
    ),
    pytest.param(
        lambda k: (f := deep_run_config(k.run()), ["sample", "--model", str(f / "checkpoints" / "checkpoint-000002")])[
            -1
        ],
        "depth 100000000",
        id="sample-checkpoint-config-depth-1e8",
    ),
    pytest.param(
        lambda k: (f := deep_run_config(k.run()), ["sample", "--model", str(f / "model")])[-1],
        "depth 100000000",
        id="sample-run-model-config-depth-1e8",
    ),
    pytest.param(
        lambda k: ["sample", "--model", str(deep_run_config(k.run()))],
        "depth 100000000",
        id="sample-run-pipeline-config-depth-1e8",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.truncate(k.weights_file(f / "transformer")),
            ["sample", "--model", str(f)],
        )[-1],
        "truncated",
        id="sample-truncated-model",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "transformer" / "config.json", depth=2),
            ["sample", "--model", str(f)],
        )[-1],
        "depth",
        id="sample-config-depth-disagrees",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "model_index.json", default_extrapolation=[band(2.0, "yarn"), band(1.5)]),
            ["sample", "--model", str(f)],
        )[-1],
        "default_extrapolation band 1",
        id="sample-edited-default-extrapolation",
    ),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)


# the hostile sizes, each in a process of its own under `ulimit -v 8000000`: pytest.param(make(kit) -> argv, word)
HOSTILE_SIZES = [
    pytest.param(lambda k: ["sample", "--num", "4000"], "at most --num", id="num-4000"),
    pytest.param(lambda k: ["sample", "--steps", "1000000000"], "at most --steps", id="steps-1e9"),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.edit_json(f / "transformer" / "config.json", depth=10**8),
            ["sample", "--model", str(f)],
        )[-1],
        "depth 100000000",
        id="config-json-depth-1e8",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.sparse_tail(k.weights_file(f / "transformer"), 84),
            ["sample", "--model", str(f)],
        )[-1],
        "longer than its tensors",
        id="sparse-84-gib-weights",
    ),
    pytest.param(
        lambda k: (f := deep_run_config(k.run()), ["sample", "--model", str(f / "checkpoints" / "checkpoint-000002")])[
            -1
        ],
        "depth 100000000",
        id="checkpoint-config-depth-1e8",
    ),
    pytest.param(
        lambda k: (
            f := k.pipeline_folder(),
            k.claimed_weights(k.weights_file(f / "transformer"), 84),
            ["sample", "--model", str(f)],
        )[-1],
        "GiB",
        id="84-gib-of-weights",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("make, word", HOSTILE_SIZES)
def test_a_hostile_size_is_refused_before_work_under_ulimit(expect_refused_under_ulimit, make, word):
    expect_refused_under_ulimit(make, word)


# -- outputs published as one set; Ctrl-C and SIGTERM ------------------------------------------------------------

OLD_SET = {"v.gif": b"old gif", "v.png": b"old png", "v.mp4": b"old mp4"}  # and v_frames/frame_000.png


def old_set(k) -> Path:
    """tmp/v.png, v.gif, v.mp4 and v_frames/ as an earlier `axialrope sample --out v.png` of a video left them."""
    for name, data in OLD_SET.items():
        k.write(name, data)
    k.write("v_frames/frame_000.png", b"old frame")
    return k.tmp / "v.png"


def stopped_sampling(k, stop=KeyboardInterrupt) -> list[str]:
    """`sample --out v.png` over an old set, stopped (Ctrl-C or SIGTERM) while the pipeline samples."""
    from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

    out = old_set(k)
    k.interrupt(AxialDiTPipeline, "__call__", stop)
    return ["sample", "--steps", "1", "--num", "1", "--out", str(out)]


def stopped_writing(k) -> list[str]:
    """`sample --out v.png` over an old set, stopped by Ctrl-C while it writes its picture."""
    from axialrope.pipelines.sampling import outputs

    out = old_set(k)
    real = outputs.save_grid

    def save_then_stop(*args, **kwargs):
        real(*args, **kwargs)
        raise KeyboardInterrupt

    k._request.getfixturevalue("monkeypatch").setattr(outputs, "save_grid", save_then_stop)
    return ["sample", "--steps", "1", "--num", "1", "--out", str(out)]


# pytest.param(make(kit) -> argv, exit code, a word of the output, the paths that may change, id=...)
RUN_CASES = [
    pytest.param(
        stopped_sampling, 130, "stopped by Ctrl-C; nothing was written", (), id="sample-ctrl-c-while-sampling"
    ),
    pytest.param(
        lambda k: stopped_sampling(k, Terminated), 143, "stopped by SIGTERM", (), id="sample-sigterm-while-sampling"
    ),
    pytest.param(stopped_writing, 130, "the files at --out are as they were", (), id="sample-ctrl-c-while-writing"),
]


@pytest.mark.parametrize("make, code, word, may_change", RUN_CASES)
def test_a_stopped_sample_leaves_the_outputs_as_they_were(expect_run_outcome, make, code, word, may_change):
    expect_run_outcome(make, code, word, may_change)


def test_a_second_command_writing_the_same_outputs_is_refused(expect_usage_error):
    """Two runs with one --out would publish a mix of both sets: the second is refused, naming the first."""
    expect_usage_error(
        lambda k: (k.hold_outputs(k.tmp / "v.png"), ["sample", "--out", str(k.tmp / "v.png")])[-1],
        "another axialrope command is writing these outputs (process",
    )


@pytest.mark.parametrize("renames", [1, 3, 4, 6], ids=lambda n: f"killed-after-{n}-renames")
def test_a_sample_killed_while_publishing_leaves_the_old_set_to_the_next_command(kit, monkeypatch, capsys, renames):
    """Killed between two of its renames (the old set partly moved out, the new partly in), a run leaves a mix
    and its temporaries; the next command on the same --out puts the old set back whole, before its own checks."""
    from axialrope.pipelines.cli import main

    out = old_set(kit)
    before = snapshot(kit.tmp)
    kit.kill_publish(out, {"v.gif": b"new gif", "v.png": b"new png", "v_frames": b""}, renames)
    assert snapshot(kit.tmp) != before  # a mix, and the set's journal and temporary folders
    monkeypatch.chdir(kit.tmp)
    code = main(["sample", "--out", str(out), "--option", "bogus=1"])  # refused after it takes the outputs' lock
    captured = capsys.readouterr()
    assert code == 2 and "--option" in captured.err
    assert "the set before it is whole again" in captured.out
    assert snapshot(kit.tmp) == before


@pytest.mark.slow
def test_sigterm_during_a_sample_is_a_clean_exit(kit):
    """A real SIGTERM while `axialrope sample` samples: exit 143, one line, nothing written, no temporary."""
    import signal
    import subprocess
    import sys
    import time

    before = snapshot(kit.tmp)
    command = [sys.executable, "-m", "axialrope.pipelines.cli", "sample", "--steps", "1000", "--out", "s.png"]
    process = subprocess.Popen(command, cwd=kit.tmp, stderr=subprocess.PIPE, text=True, env={**os.environ})
    started, seen = time.monotonic(), ""
    while "%|" not in seen and time.monotonic() - started < 120:  # the progress bar: it samples
        seen += process.stderr.read(1)
    process.send_signal(signal.SIGTERM)
    rest = process.communicate(timeout=120)[1]
    lines = [line for line in (seen + rest).splitlines() if line.startswith("axialrope ")]
    assert process.returncode == 143 and len(lines) == 1 and "stopped by SIGTERM" in lines[0], seen + rest
    assert snapshot(kit.tmp) == before


@pytest.mark.slow
def test_a_sample_killed_outright_while_publishing_leaves_the_old_set_to_the_next_command(kit):
    """A real SIGKILL between two renames of the publish (a process, killed from inside at that moment)."""
    import subprocess
    import sys

    out = old_set(kit)
    before = snapshot(kit.tmp)
    kill = f"""
import os, signal
from pathlib import Path
from axialrope.pipelines.publishing import OutputSet
real, done = os.replace, []
def replace(source, target):
    if len(done) == 4:
        os.kill(os.getpid(), signal.SIGKILL)
    done.append(target)
    return real(source, target)
os.replace = replace
def write(staging):
    for name in ("v.gif", "v.png", "v.mp4"):
        (staging / name).write_bytes(b"new")
with OutputSet(Path({str(kit.tmp)!r}), "v") as outputs:
    outputs.publish(["v.gif", "v.png", "v.mp4", "v_frames"], write)
"""
    done = subprocess.run([sys.executable, "-c", kill], capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr[-2000:]
    assert snapshot(kit.tmp) != before
    again = subprocess.run(
        [sys.executable, "-m", "axialrope.pipelines.cli", "sample", "--out", str(out), "--option", "bogus=1"],
        cwd=kit.tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 2, again.stderr[-2000:]
    assert snapshot(kit.tmp) == before
