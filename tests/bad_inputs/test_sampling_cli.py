"""The catalogue of bad inputs: every one fails with a clear error and writes nothing.

Python calls raise a ValueError or TypeError (or FileNotFoundError for a path that does not
exist) naming the argument; each case asserts the type, a word of the message, and that the
test's folder is unchanged afterwards. CLI calls exit with code 2 and one line on stderr,
before any output (the working folder is the test's, so a default output path would show).
"""

from __future__ import annotations

import json
import math
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from axialrope import (
    AxialRotaryEmbedding,
    Extrapolation,
    KVCache,
    RoPEAttention,
    RopeScaling,
    RotaryEmbedding,
    apply_rotary,
    apply_rotary_qk,
    grid_coords,
    rope_frequencies,
)
from axialrope.models import TextLMConfig, TinyCausalLM, create_dit
from axialrope.models.axial_dit.position_encoding import GridRope, RopeConfig
from axialrope.pipelines.cli import main
from axialrope.pipelines.cli.preflight import check_device
from axialrope.pipelines.data.folders import ImageFolderDataset
from axialrope.pipelines.objectives import make_objective, sample
from axialrope.pipelines.paths import check_output_file, check_output_folder
from axialrope.pipelines.sampling.bundled import bundled_model_path, load_dit, load_pipeline
from axialrope.pipelines.sampling.memory import check_sampling_memory
from axialrope.pipelines.training.checkpoints import DamagedCheckpointError, find_resumable, read_checkpoint
from axialrope.pipelines.training.config import TrainConfig, read_config_file
from axialrope.pipelines.training.loop import train
from axialrope.pipelines.training.text_lm import load_checkpoint
from axialrope.pipelines.training.train_state import StateFileError, read_state, write_state

NO_GPU = not torch.cuda.is_available()
NEEDS_NO_GPU = pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")


# -- small things the cases are made of --------------------------------------------------------


def table(*shape):
    return torch.ones(*shape), torch.zeros(*shape)


def attention():
    return RoPEAttention(32, 4, 2)  # head_dim 8, 2 key/value heads


def kv(batch=1, heads=2, length=3, head_dim=8, value_length=None):
    return KVCache(torch.zeros(batch, heads, length, head_dim), torch.zeros(batch, heads, value_length or length,
                                                                              head_dim))


def cache(**kwargs):
    """A KVCache that bypasses its own checks, to reach the attention's."""
    made = kv()
    for name, value in kwargs.items():
        object.__setattr__(made, name, value)
    return made


def dit(**overrides):
    torch.manual_seed(0)
    return create_dit("tiny", **{"sample_size": 8, "in_channels": 3, "num_classes": 2, **overrides}).eval()


def dit_call(timestep, **overrides):
    model = dit(**overrides)
    return lambda: model(torch.zeros(1, 3, 8, 8), timestep, class_labels=torch.tensor([0]))


def lm():
    torch.manual_seed(0)
    return TinyCausalLM(TextLMConfig(vocab_size=8, dim=16, depth=1, num_heads=2, num_kv_heads=1))


def set_attr(obj, name, value):
    return lambda: setattr(obj, name, value)


def model_folder(tmp: Path, name="model", **overrides) -> Path:
    """A saved tiny DiT (save_pretrained): config.json and safetensors weights."""
    folder = tmp / name
    dit(**overrides).save_pretrained(folder)
    return folder


def truncate(path: Path) -> Path:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return path


def edit_json(path: Path, **changes) -> Path:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return path


def pipeline_folder(tmp: Path) -> Path:
    """A copy of the bundled image pipeline, to damage."""
    return Path(shutil.copytree(bundled_model_path("shapes-rope"), tmp / "pipe"))


def band(up_to_scale, method="pi", entropy_scaling=False) -> dict:
    """One band of an AxialDiTPipeline's default_extrapolation."""
    return {"up_to_scale": up_to_scale, "method": method, "entropy_scaling": entropy_scaling}


def weights_file(folder: Path) -> Path:
    return folder / "diffusion_pytorch_model.safetensors"


def lm_file(tmp: Path) -> Path:
    from axialrope.pipelines.training.text_lm import save_checkpoint

    save_checkpoint(lm(), tmp / "lm.safetensors")
    return tmp / "lm.safetensors"


class Payload:
    def __reduce__(self):
        return (print, ("the payload ran",))


def train_config(tmp: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({"resolution": ["16"], "output_dir": str(tmp / "run"), **overrides})


def empty_class(tmp: Path) -> Path:
    from PIL import Image

    (tmp / "data" / "circle").mkdir(parents=True)
    (tmp / "data" / "empty").mkdir()
    Image.new("RGB", (8, 8)).save(tmp / "data" / "circle" / "0.png")
    return tmp / "data"


def old_checkpoint(tmp: Path) -> Path:
    """A checkpoint folder as accelerate's save_state wrote it: pickle files beside the weights."""
    folder = tmp / "checkpoints" / "checkpoint-000002"
    folder.mkdir(parents=True)
    for name in ("optimizer.bin", "scheduler.bin", "random_states_0.pkl", "custom_checkpoint_0.pkl"):
        (folder / name).write_bytes(pickle.dumps(Payload()))
    return folder


@pytest.fixture(scope="module")
def pipe():
    return load_pipeline(None, "cpu")


# -- the Python catalogue: (id, make(tmp, pipe) -> call, error type, a word of the message) ---------

PYTHON_CASES = [
    # core: context scaling
    ("linear-without-factor", lambda t, p: lambda: rope_frequencies(64, scaling={"rope_type": "linear"}), ValueError, "factor"),
    ("ntk-without-factor", lambda t, p: lambda: rope_frequencies(64, scaling={"rope_type": "ntk"}), ValueError, "factor"),
    ("linear-factor-none", lambda t, p: lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": None}),
     ValueError, "factor"),
    ("ntk-factor-none", lambda t, p: lambda: rope_frequencies(64, scaling={"type": "ntk", "factor": None}), ValueError, "factor"),
    ("dynamic-without-factor", lambda t, p: lambda: rope_frequencies(
        64, scaling={"rope_type": "dynamic", "original_max_position_embeddings": 8}), ValueError, "factor"),
    ("typed-linear-without-factor", lambda t, p: lambda: RopeScaling("linear"), ValueError, "needs factor"),
    ("ntk-factor-1e300", lambda t, p: lambda: rope_frequencies(64, scaling={"rope_type": "ntk", "factor": 1e300}),
     ValueError, "overflows"),
    ("dynamic-factor-1e300-long", lambda t, p: lambda: rope_frequencies(
        64, scaling={"rope_type": "dynamic", "factor": 1e300, "original_max_position_embeddings": 8}, seq_len=16),
     ValueError, "overflows"),
    ("ntk-factor-1e300-in-a-table", lambda t, p: lambda: AxialRotaryEmbedding(
        (16, 16), scaling={"rope_type": "ntk", "factor": 1e300}), ValueError, "overflows"),
    ("yarn-attention-factor-0", lambda t, p: lambda: RopeScaling("yarn", 2.0, 8, attention_factor=0.0),
     ValueError, "attention_factor"),
    ("yarn-attention-factor-negative", lambda t, p: lambda: rope_frequencies(64, scaling={
        "rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8, "attention_factor": -1.0}),
     ValueError, "attention_factor"),
    ("yarn-attention-factor-nan", lambda t, p: lambda: RopeScaling("yarn", 2.0, 8, attention_factor=math.nan),
     ValueError, "finite"),
    ("yarn-negative-mscale", lambda t, p: lambda: RopeScaling("yarn", 2.0, 8, mscale=-1.0), ValueError, "mscale"),
    ("yarn-negative-mscale-all-dim", lambda t, p: lambda: RopeScaling("yarn", 2.0, 8, mscale=1.0, mscale_all_dim=-0.5),
     ValueError, "mscale_all_dim"),
    ("llama3-bands-reversed", lambda t, p: lambda: RopeScaling("llama3", 8.0, 64, low_freq_factor=4.0, high_freq_factor=1.0),
     ValueError, "high_freq_factor"),
    ("ntk-on-a-2-channel-axis", lambda t, p: lambda: AxialRotaryEmbedding((2, 8), scaling={"rope_type": "ntk", "factor": 2.0}),
     ValueError, "dim must be > 2"),
    ("extrapolation-unknown-method", lambda t, p: lambda: Extrapolation("bogus"), ValueError, "method"),
    ("extrapolation-negative-beta", lambda t, p: lambda: Extrapolation("yarn", beta_fast=-1.0), ValueError, "beta_fast"),
    ("grid-negative-size", lambda t, p: lambda: grid_coords(4, -1), ValueError, "grid sizes"),
    # core: tables and their cache
    ("cache-size-negative", lambda t, p: lambda: AxialRotaryEmbedding((8, 8), cache_size=-1), ValueError, "cache_size"),
    ("cache-size-negative-1d", lambda t, p: lambda: RotaryEmbedding(16, cache_size=-1), ValueError, "cache_size"),
    ("cache-size-float", lambda t, p: lambda: RotaryEmbedding(16, cache_size=1.5), ValueError, "cache_size"),
    ("cache-size-bool", lambda t, p: lambda: RotaryEmbedding(16, cache_size=True), ValueError, "cache_size"),
    ("cache-size-set-negative", lambda t, p: set_attr(RotaryEmbedding(16), "cache_size", -1), ValueError, "cache_size"),
    ("set-frequencies-bad-scaling", lambda t, p: lambda: AxialRotaryEmbedding((8, 8)).set_frequencies(
        500.0, {"rope_type": "bogus"}), ValueError, "rope_type"),
    ("set-frequencies-theta-count", lambda t, p: lambda: AxialRotaryEmbedding((8, 8)).set_frequencies((1e4, 1e4, 1e4)),
     ValueError, "theta"),
    ("set-frequencies-theta-below-1", lambda t, p: lambda: RotaryEmbedding(16).set_frequencies(0.5), ValueError, "theta"),
    ("coords-complex", lambda t, p: lambda: AxialRotaryEmbedding((8, 8))(torch.zeros(4, 2, dtype=torch.complex64)),
     TypeError, "real"),
    ("positions-nan", lambda t, p: lambda: RotaryEmbedding(8)(torch.tensor([0.0, math.nan])), ValueError, "finite"),
    # core: applying a table
    ("apply-int64-x", lambda t, p: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.int64), *table(4, 8)),
     TypeError, "floating-point"),
    ("apply-int32-x", lambda t, p: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.int32), *table(4, 8)),
     TypeError, "floating-point"),
    ("apply-complex-x", lambda t, p: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.complex64), *table(4, 8)),
     TypeError, "floating-point"),
    ("apply-bool-x", lambda t, p: lambda: apply_rotary(torch.ones(4, 16, dtype=torch.bool), *table(4, 8)),
     TypeError, "floating-point"),
    ("apply-int-cos", lambda t, p: lambda: apply_rotary(torch.ones(4, 16), torch.ones(4, 8, dtype=torch.long),
                                                         torch.zeros(4, 8)), TypeError, "cos"),
    ("apply-table-more-rows-than-x", lambda t, p: lambda: apply_rotary(torch.ones(4, 16), *table(9, 4, 8)),
     ValueError, "enlarge"),
    ("apply-table-longer-than-x", lambda t, p: lambda: apply_rotary(torch.ones(2, 1, 16), *table(7, 8)),
     ValueError, "enlarge"),
    ("apply-qk-int64-k", lambda t, p: lambda: apply_rotary_qk(torch.ones(4, 16), torch.ones(4, 16, dtype=torch.int64),
                                                               *table(4, 8)), TypeError, "k must be"),
    ("apply-qk-table-enlarges-k", lambda t, p: lambda: apply_rotary_qk(torch.ones(2, 4, 16), torch.ones(1, 4, 16),
                                                                        *table(2, 4, 8)), ValueError, "enlarge"),
    ("apply-not-a-tensor", lambda t, p: lambda: apply_rotary([1.0, 2.0], *table(1, 1)), TypeError, "torch.Tensor"),
    # core: attention and its KV cache
    ("kv-values-shorter-than-keys", lambda t, p: lambda: kv(length=5, value_length=3), ValueError, "values"),
    ("kv-keys-not-4d", lambda t, p: lambda: KVCache(torch.zeros(2, 3, 8), torch.zeros(2, 3, 8)), TypeError, "keys"),
    ("kv-values-not-tensor", lambda t, p: lambda: KVCache(torch.zeros(1, 2, 3, 8), [0.0]), TypeError, "values"),
    ("attention-tuple-cache", lambda t, p: lambda: attention()(torch.zeros(1, 2, 32),
                                                                (torch.zeros(1, 2, 3, 8),) * 2), TypeError, "KVCache"),
    ("attention-cache-wrong-head-dim", lambda t, p: lambda: attention()(torch.zeros(1, 2, 32), kv(head_dim=16)),
     ValueError, "head_dim"),
    ("attention-cache-wrong-kv-heads", lambda t, p: lambda: attention()(torch.zeros(1, 2, 32), kv(heads=4)),
     ValueError, "num_kv_heads"),
    ("attention-cache-wrong-batch", lambda t, p: lambda: attention()(torch.zeros(1, 2, 32), kv(batch=3)),
     ValueError, "batch"),
    ("attention-cache-values-bypassed", lambda t, p: lambda: attention()(
        torch.zeros(1, 2, 32), cache(values=torch.zeros(1, 2, 1, 8))), ValueError, "values"),
    ("attention-width", lambda t, p: lambda: attention()(torch.zeros(1, 2, 16)), ValueError, "x must have shape"),
    # models
    ("dit-nan-timestep-tensor", lambda t, p: dit_call(torch.tensor([math.nan])), ValueError, "timestep"),
    ("dit-inf-timestep-tensor", lambda t, p: dit_call(torch.tensor(math.inf)), ValueError, "finite"),
    ("dit-nan-timestep-number", lambda t, p: dit_call(math.nan), ValueError, "finite"),
    ("dit-complex-timestep", lambda t, p: dit_call(torch.tensor([1j])), TypeError, "timestep"),
    ("dit-timestep-string", lambda t, p: dit_call("500"), TypeError, "timestep"),
    ("dit-rope-config-not-a-config", lambda t, p: set_attr(dit(), "rope_config", {"theta": 500}), TypeError, "RopeConfig"),
    ("dit-rope-config-three-thetas", lambda t, p: set_attr(dit(), "rope_config", RopeConfig(theta=(1e4, 1e4, 1e4))),
     ValueError, "theta"),
    ("dit-rope-config-riflex-out-of-range", lambda t, p: set_attr(dit(), "rope_config", RopeConfig(
        theta=500.0, scaling=RopeScaling("riflex", 2.0, 8, riflex_index=99))), ValueError, "riflex_index"),
    ("dit-rope-config-offsets", lambda t, p: set_attr(dit(), "rope_config", RopeConfig(offset=(1.0, 2.0, 3.0))),
     ValueError, "offset"),
    ("sincos-rope-config-scaling", lambda t, p: set_attr(dit(position_encoding="sincos"), "rope_config", RopeConfig(
        scaling=RopeScaling("linear", 2.0))), ValueError, "sincos"),
    ("grid-rope-config-scale", lambda t, p: set_attr(GridRope((8, 8)), "config", RopeConfig(scale=(1.0, 1.0, 1.0))),
     ValueError, "scale"),
    ("lm-scaling-without-factor", lambda t, p: lambda: lm().set_rope_scaling({"rope_type": "linear"}), ValueError, "factor"),
    ("lm-theta-below-1", lambda t, p: lambda: lm().set_rope_scaling(None, theta=0.5), ValueError, "theta"),
    ("lm-tuple-cache", lambda t, p: lambda: lm()(torch.zeros(1, 2, dtype=torch.long), [(torch.zeros(1, 1, 2, 8),) * 2]),
     TypeError, "KVCache"),
    ("dit-unknown-size", lambda t, p: lambda: create_dit("huge"), ValueError, "size"),
    # pipelines: model folders
    ("load-dit-truncated-weights", lambda t, p: (f := model_folder(t), truncate(weights_file(f)),
                                                 lambda: load_dit(f))[-1], ValueError, "truncated"),
    ("load-dit-corrupt-weights", lambda t, p: (f := model_folder(t), weights_file(f).write_bytes(b"\x08" + b"\x00" * 7 + b"{]"),
                                               lambda: load_dit(f))[-1], ValueError, "corrupt"),
    ("load-dit-malformed-config", lambda t, p: (f := model_folder(t), (f / "config.json").write_text("{depth: 2"),
                                                lambda: load_dit(f))[-1], ValueError, "JSON"),
    ("load-dit-config-depth-disagrees", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", depth=1),
                                                      lambda: load_dit(f))[-1], ValueError, "depth"),
    ("load-dit-config-deeper-than-weights", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", depth=4),
                                                          lambda: load_dit(f))[-1], ValueError, "depth"),
    ("load-dit-config-width-disagrees", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", hidden_size=32),
                                                      lambda: load_dit(f))[-1], ValueError, "shape"),
    ("load-dit-config-classes-disagree", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", num_classes=5),
                                                       lambda: load_dit(f))[-1], ValueError, "config.json"),
    ("load-dit-config-invalid", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", patch_size=0),
                                              lambda: load_dit(f))[-1], ValueError, "valid DiT"),
    ("load-dit-pickle-weights-only", lambda t, p: (f := model_folder(t), weights_file(f).rename(f / "model.bin"),
                                                   lambda: load_dit(f))[-1], ValueError, "pickle"),
    ("load-dit-other-class", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", _class_name="UNet2DModel"),
                                           lambda: load_dit(f))[-1], ValueError, "DiT"),
    ("load-pipeline-malformed-index", lambda t, p: (f := pipeline_folder(t), (f / "model_index.json").write_text("{"),
                                                    lambda: load_pipeline(str(f), "cpu"))[-1], ValueError, "JSON"),
    ("load-pipeline-foreign-transformer", lambda t, p: (f := pipeline_folder(t), edit_json(
        f / "model_index.json", transformer=["os", "system"]), lambda: load_pipeline(str(f), "cpu"))[-1],
     ValueError, "axialrope"),
    ("load-pipeline-truncated-transformer", lambda t, p: (f := pipeline_folder(t), truncate(weights_file(f / "transformer")),
                                                          lambda: load_pipeline(str(f), "cpu"))[-1], ValueError, "truncated"),
    ("load-pipeline-malformed-scheduler", lambda t, p: (f := pipeline_folder(t), (
        f / "scheduler" / "scheduler_config.json").write_text("]"), lambda: load_pipeline(str(f), "cpu"))[-1],
     ValueError, "JSON"),
    # pipelines: training configs
    ("output-dir-is-a-file", lambda t, p: ((t / "file").write_text("x"), lambda: train_config(
        t, output_dir=str(t / "file")).validate())[-1], ValueError, "output_dir"),
    ("output-dir-under-a-file", lambda t, p: ((t / "file").write_text("x"), lambda: train_config(
        t, output_dir=str(t / "file" / "run")).validate())[-1], ValueError, "output_dir"),
    ("init-from-truncated", lambda t, p: (f := model_folder(t), truncate(weights_file(f)), lambda: train_config(
        t, init_from=str(f)).validate())[-1], ValueError, "truncated"),
    ("init-from-depth-disagrees", lambda t, p: (f := model_folder(t), edit_json(f / "config.json", depth=3),
                                                lambda: train_config(t, init_from=str(f)).validate())[-1], ValueError, "depth"),
    ("resume-not-a-folder", lambda t, p: lambda: train_config(t, resume=str(t / "nowhere")).validate(), ValueError, "resume"),
    ("resume-badly-named-folder", lambda t, p: ((t / "ckpt").mkdir(), lambda: train_config(
        t, resume=str(t / "ckpt")).validate())[-1], ValueError, "checkpoint folder"),
    ("config-malformed-yaml", lambda t, p: ((t / "c.yaml").write_text("a: [b\n  c"),
                                            lambda: read_config_file(t / "c.yaml"))[-1], ValueError, "YAML"),
    ("config-malformed-json", lambda t, p: ((t / "c.json").write_text("{'a': 1}"),
                                            lambda: read_config_file(t / "c.json"))[-1], ValueError, "JSON"),
    ("config-a-list", lambda t, p: ((t / "c.yaml").write_text("- 1\n- 2\n"), lambda: TrainConfig.from_file(t / "c.yaml"))[-1],
     ValueError, "mapping"),
    ("config-binary", lambda t, p: ((t / "c.yaml").write_bytes(b"\xff\xfe\x00"), lambda: read_config_file(t / "c.yaml"))[-1],
     ValueError, "YAML"),
    ("empty-class-folder", lambda t, p: (d := empty_class(t), lambda: ImageFolderDataset(d))[-1], ValueError, "'empty'"),
    ("train-empty-class-folder", lambda t, p: (d := empty_class(t), lambda: train(train_config(
        t, data="image_folder", data_dir=str(d))))[-1], ValueError, "class folder"),
    # pipelines: sampling
    ("sample-negative-guidance", lambda t, p: lambda: sample(dit(), make_objective("flow"), torch.zeros(1, 3, 8, 8),
                                                               torch.tensor([0]), 1, -1.0, 2), ValueError, "guidance_scale"),
    ("pipeline-negative-guidance", lambda t, p: lambda: p(class_labels=[0], guidance_scale=-2.0, num_inference_steps=1),
     ValueError, "guidance_scale"),
    ("pipeline-nan-guidance", lambda t, p: lambda: p(class_labels=[0], guidance_scale=math.nan), ValueError, "guidance"),
    ("default-extrapolation-not-a-list", lambda t, p: lambda: p.set_default_extrapolation("pi"), TypeError,
     "default_extrapolation"),
    ("default-extrapolation-unknown-method", lambda t, p: lambda: p.set_default_extrapolation(
        [band(None, "dype")]), ValueError, "default_extrapolation band 0"),
    ("default-extrapolation-decreasing", lambda t, p: lambda: p.set_default_extrapolation(
        [band(3.0), band(2.0)]), ValueError, "must increase"),
    ("default-extrapolation-zero-scale", lambda t, p: lambda: p.set_default_extrapolation([band(0.0)]), ValueError,
     "up_to_scale"),
    ("load-pipeline-bad-default-extrapolation", lambda t, p: (f := pipeline_folder(t), edit_json(
        f / "model_index.json", default_extrapolation=[band(None, "yarnn")]), lambda: load_pipeline(str(f), "cpu"))[-1],
     ValueError, "default_extrapolation"),
    ("sampling-memory-huge", lambda t, p: lambda: check_sampling_memory(p.transformer, 4, (1 << 16, 1 << 16), True, "cpu"),
     ValueError, "GiB"),
    ("out-is-a-folder", lambda t, p: lambda: check_output_file(t, "--out"), ValueError, "folder"),
    ("out-under-a-file", lambda t, p: ((t / "f").write_text("x"), lambda: check_output_file(t / "f" / "x.png", "--out"))[-1],
     ValueError, "is a file"),
    ("output-folder-under-a-file", lambda t, p: ((t / "f").write_text("x"), lambda: check_output_folder(
        t / "f" / "a" / "b", "--output-dir"))[-1], ValueError, "is a file"),
    ("device-unknown", lambda t, p: lambda: check_device("tpu"), ValueError, "--device"),
    ("device-garbage", lambda t, p: lambda: check_device("cuda:x"), ValueError, "--device"),
    ("device-cuda-without-gpu", lambda t, p: lambda: check_device("cuda"), ValueError, "CUDA", NEEDS_NO_GPU),
    # pipelines: checkpoints and state files
    ("lm-checkpoint-truncated", lambda t, p: (f := lm_file(t), truncate(f), lambda: load_checkpoint(f))[-1],
     ValueError, "truncated"),
    ("lm-checkpoint-pickle", lambda t, p: ((t / "lm.pt").write_bytes(pickle.dumps(Payload())),
                                           lambda: load_checkpoint(t / "lm.pt"))[-1], ValueError, "safetensors"),
    ("lm-checkpoint-missing", lambda t, p: lambda: load_checkpoint(t / "none.safetensors"), FileNotFoundError, "does not exist"),
    ("state-file-pickle", lambda t, p: ((t / "s.safetensors").write_bytes(pickle.dumps(Payload())),
                                        lambda: read_state(t / "s.safetensors"))[-1], StateFileError, "corrupt"),
    ("state-file-unknown-tag", lambda t, p: ((t / "s.json").write_text('{"__class__": "os.system"}'),
                                             lambda: read_state(t / "s.json"))[-1], StateFileError, "unknown tag"),
    ("state-of-an-object", lambda t, p: lambda: write_state(t / "s.json", {"x": object()}), TypeError, "pickle"),
    ("accelerate-checkpoint", lambda t, p: (f := old_checkpoint(t), lambda: read_checkpoint(f))[-1],
     DamagedCheckpointError, "trainer_state.json"),
    ("resume-only-damaged", lambda t, p: (old_checkpoint(t), lambda: find_resumable(
        "latest", t / "checkpoints", report=lambda line: None))[-1], DamagedCheckpointError, "no usable checkpoint"),
    ("resume-missing-folder", lambda t, p: lambda: find_resumable(str(t / "checkpoint-000002"), t), FileNotFoundError,
     "does not exist"),
]


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("make, error, word", [
    pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in PYTHON_CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(tmp_path, pipe, make, error, word):
    call = make(tmp_path, pipe)  # builds the bad input (files included) first
    before = snapshot(tmp_path)
    with pytest.raises(error) as raised:
        call()
    assert word in str(raised.value)
    assert snapshot(tmp_path) == before


# -- the CLI catalogue: (id, make(tmp) -> argv, a word of the message) ------------------------------

CLI_CASES = [
    pytest.param(lambda t: ["sample", "--device", "cuda"], "CUDA", id="sample-cuda-without-gpu",
                 marks=NEEDS_NO_GPU),
    pytest.param(lambda t: ["compare", "--device", "cuda"], "CUDA", id="compare-cuda-without-gpu",
                 marks=NEEDS_NO_GPU),
    pytest.param(lambda t: ["sample", "--device", "quantum"], "--device", id="sample-unknown-device"),
    pytest.param(lambda t: ((t / "f").write_text("x"), ["sample", "--out", str(t / "f" / "x.png")])[-1], "is a file",
                 id="sample-out-under-a-file"),
    pytest.param(lambda t: ((t / "d").mkdir(), ["sample", "--out", str(t / "d")])[-1], "folder", id="sample-out-a-folder"),
    pytest.param(lambda t: ((t / "f").write_text("x"), ["compare", "--out", str(t / "f" / "c.png")])[-1], "is a file",
                 id="compare-out-under-a-file"),
    pytest.param(lambda t: ["sample", "--height", "65536", "--width", "65536"], "GiB", id="sample-huge-size"),
    pytest.param(lambda t: ["compare", "--height", "65536", "--width", "65536", "--methods", "none"], "GiB",
                 id="compare-huge-size"),
    pytest.param(lambda t: ["sample", "--guidance", "-1"], "--guidance", id="sample-negative-guidance"),
    pytest.param(lambda t: ["sample", "--guidance", "nan"], "--guidance", id="sample-nan-guidance"),
    pytest.param(lambda t: ["compare", "--guidance", "-2"], "--guidance", id="compare-negative-guidance"),
    pytest.param(lambda t: ["sample", "--steps", "0"], "--steps", id="sample-zero-steps"),
    pytest.param(lambda t: ["sample", "--fps", "0"], "--fps", id="sample-zero-fps"),
    pytest.param(lambda t: ["sample", "--height", "-8"], "--height", id="sample-negative-height"),
    pytest.param(lambda t: (f := pipeline_folder(t), truncate(weights_file(f / "transformer")),
                            ["sample", "--model", str(f)])[-1], "truncated", id="sample-truncated-model"),
    pytest.param(lambda t: (f := pipeline_folder(t), edit_json(f / "transformer" / "config.json", depth=2),
                            ["sample", "--model", str(f)])[-1], "depth", id="sample-config-depth-disagrees"),
    pytest.param(lambda t: (f := pipeline_folder(t), edit_json(f / "model_index.json", default_extrapolation=[
        band(2.0, "yarn"), band(1.5)]), ["sample", "--model", str(f)])[-1], "default_extrapolation band 1",
                 id="sample-edited-default-extrapolation"),
    pytest.param(lambda t: ((t / "f").write_text("x"), ["train", "--output-dir", str(t / "f")])[-1], "output_dir",
                 id="train-output-dir-a-file"),
    pytest.param(lambda t: ((t / "c.yaml").write_text("max_steps: [1\n"), ["train", "--config", str(t / "c.yaml")])[-1],
                 "YAML", id="train-malformed-yaml"),
    pytest.param(lambda t: ((t / "c.yaml").write_text("- max_steps\n"), ["train", "--config", str(t / "c.yaml")])[-1],
                 "mapping", id="train-config-not-a-mapping"),
    pytest.param(lambda t: (f := model_folder(t), truncate(weights_file(f)), ["train", "--init-from", str(f)])[-1],
                 "truncated", id="train-truncated-init-from"),
    pytest.param(lambda t: ["train", "--resume", str(t / "checkpoint-000004")], "resume", id="train-resume-missing"),
    pytest.param(lambda t: ["train", "--rope-theta", "0.5"], "rope_theta", id="train-theta-below-1"),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(tmp_path, monkeypatch, capsys, make, word):
    argv = make(tmp_path)
    monkeypatch.chdir(tmp_path)  # default outputs (outputs/...) would land here
    before = snapshot(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    message = [line for line in captured.err.splitlines() if line.startswith("axialrope ")]
    assert len(message) == 1 and captured.out == "", captured.err
    assert word in message[0]
    assert snapshot(tmp_path) == before


def test_the_catalogue_has_at_least_80_bad_inputs():
    assert len(PYTHON_CASES) + len(CLI_CASES) >= 80
