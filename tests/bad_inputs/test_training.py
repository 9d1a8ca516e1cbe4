"""Bad inputs of training: configs and config files, checkpoints and state files, the text LM's
checkpoints, and `axialrope train`."""

import pickle
from pathlib import Path

import pytest

from axialrope.pipelines.training.checkpoints import DamagedCheckpointError, find_resumable, read_checkpoint
from axialrope.pipelines.training.config import TrainConfig, read_config_file
from axialrope.pipelines.training.text_lm import load_checkpoint
from axialrope.pipelines.training.train_state import StateFileError, read_state, write_state


class Payload:
    def __reduce__(self):
        return (print, ("the payload ran",))


def train_config(tmp: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({"resolution": ["16"], "output_dir": str(tmp / "run"), **overrides})


def lm_file(tmp: Path) -> Path:
    from axialrope.models import TextLMConfig, TinyCausalLM
    from axialrope.pipelines.training.text_lm import save_checkpoint

    save_checkpoint(TinyCausalLM(TextLMConfig(vocab_size=8, dim=16, depth=1, num_heads=2, num_kv_heads=1)),
                    tmp / "lm.safetensors")
    return tmp / "lm.safetensors"


def old_checkpoint(tmp: Path) -> Path:
    """A checkpoint folder as accelerate's save_state wrote it: pickle files beside the weights."""
    folder = tmp / "checkpoints" / "checkpoint-000002"
    folder.mkdir(parents=True)
    for name in ("optimizer.bin", "scheduler.bin", "random_states_0.pkl", "custom_checkpoint_0.pkl"):
        (folder / name).write_bytes(pickle.dumps(Payload()))
    return folder


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    # configs
    ("output-dir-is-a-file",
     lambda k: (k.write("file", "x"), lambda: train_config(k.tmp, output_dir=str(k.tmp / "file")).validate())[-1],
     ValueError, "output_dir"),
    ("output-dir-under-a-file",
     lambda k: (k.write("file", "x"),
                lambda: train_config(k.tmp, output_dir=str(k.tmp / "file" / "run")).validate())[-1],
     ValueError, "output_dir"),
    ("init-from-truncated",
     lambda k: (f := k.model_folder(), k.truncate(k.weights_file(f)),
                lambda: train_config(k.tmp, init_from=str(f)).validate())[-1], ValueError, "truncated"),
    ("init-from-depth-disagrees",
     lambda k: (f := k.model_folder(), k.edit_json(f / "config.json", depth=3),
                lambda: train_config(k.tmp, init_from=str(f)).validate())[-1], ValueError, "depth"),
    ("resume-not-a-folder",
     lambda k: lambda: train_config(k.tmp, resume=str(k.tmp / "nowhere")).validate(), ValueError, "resume"),
    ("resume-badly-named-folder",
     lambda k: ((k.tmp / "ckpt").mkdir(), lambda: train_config(k.tmp, resume=str(k.tmp / "ckpt")).validate())[-1],
     ValueError, "checkpoint folder"),
    # config files
    ("config-malformed-yaml",
     lambda k: (k.write("c.yaml", "a: [b\n  c"), lambda: read_config_file(k.tmp / "c.yaml"))[-1], ValueError, "YAML"),
    ("config-malformed-json",
     lambda k: (k.write("c.json", "{'a': 1}"), lambda: read_config_file(k.tmp / "c.json"))[-1], ValueError, "JSON"),
    ("config-a-list",
     lambda k: (k.write("c.yaml", "- 1\n- 2\n"), lambda: TrainConfig.from_file(k.tmp / "c.yaml"))[-1],
     ValueError, "mapping"),
    ("config-binary",
     lambda k: (k.write("c.yaml", b"\xff\xfe\x00"), lambda: read_config_file(k.tmp / "c.yaml"))[-1],
     ValueError, "YAML"),
    # checkpoints and state files
    ("lm-checkpoint-truncated",
     lambda k: (f := lm_file(k.tmp), k.truncate(f), lambda: load_checkpoint(f))[-1], ValueError, "truncated"),
    ("lm-checkpoint-pickle",
     lambda k: (k.write("lm.pt", pickle.dumps(Payload())), lambda: load_checkpoint(k.tmp / "lm.pt"))[-1],
     ValueError, "safetensors"),
    ("lm-checkpoint-missing",
     lambda k: lambda: load_checkpoint(k.tmp / "none.safetensors"), FileNotFoundError, "does not exist"),
    ("state-file-pickle",
     lambda k: (k.write("s.safetensors", pickle.dumps(Payload())), lambda: read_state(k.tmp / "s.safetensors"))[-1],
     StateFileError, "corrupt"),
    ("state-file-unknown-tag",
     lambda k: (k.write("s.json", '{"__class__": "os.system"}'), lambda: read_state(k.tmp / "s.json"))[-1],
     StateFileError, "unknown tag"),
    ("state-of-an-object", lambda k: lambda: write_state(k.tmp / "s.json", {"x": object()}), TypeError, "pickle"),
    ("accelerate-checkpoint",
     lambda k: (f := old_checkpoint(k.tmp), lambda: read_checkpoint(f))[-1],
     DamagedCheckpointError, "trainer_state.json"),
    ("resume-only-damaged",
     lambda k: (old_checkpoint(k.tmp),
                lambda: find_resumable("latest", k.tmp / "checkpoints", report=lambda line: None))[-1],
     DamagedCheckpointError, "no usable checkpoint"),
    ("resume-missing-folder",
     lambda k: lambda: find_resumable(str(k.tmp / "checkpoint-000002"), k.tmp), FileNotFoundError, "does not exist"),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)


# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(lambda k: (k.write("f", "x"), ["train", "--output-dir", str(k.tmp / "f")])[-1], "output_dir",
                 id="train-output-dir-a-file"),
    pytest.param(lambda k: (k.write("c.yaml", "max_steps: [1\n"), ["train", "--config", str(k.tmp / "c.yaml")])[-1],
                 "YAML", id="train-malformed-yaml"),
    pytest.param(lambda k: (k.write("c.yaml", "- max_steps\n"), ["train", "--config", str(k.tmp / "c.yaml")])[-1],
                 "mapping", id="train-config-not-a-mapping"),
    pytest.param(lambda k: (f := k.model_folder(), k.truncate(k.weights_file(f)),
                            ["train", "--init-from", str(f)])[-1],
                 "truncated", id="train-truncated-init-from"),
    pytest.param(lambda k: ["train", "--resume", str(k.tmp / "checkpoint-000004")], "resume",
                 id="train-resume-missing"),
    pytest.param(lambda k: ["train", "--rope-theta", "0.5"], "rope_theta", id="train-theta-below-1"),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)
