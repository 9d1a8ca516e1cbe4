"""The core imports torch and einops only (Triton where installed): nothing from the model stack, and no
file of it imports axialrope.models or axialrope.pipelines."""

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "axialrope"

CHECK = """
import sys
import axialrope, axialrope.fused, axialrope.kernels.compiling
import axialrope.kernels.backends, axialrope.kernels.triton_norm_rope
heavy = sorted(name for name in ("diffusers", "transformers", "accelerate", "torchvision") if name in sys.modules)
print(",".join(heavy))
"""


def test_the_core_pulls_in_no_model_or_pipeline_library():
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "", f"axialrope imported {result.stdout.strip()}"


def _imported_modules(path: Path, root: Path = CORE.parent) -> list[str]:
    """The absolute names a file under `root` imports, relative ones resolved (axialrope/x.py: "." is axialrope)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            names += [source] + [f"{source}.{alias.name}" for alias in node.names]
    return names


def test_no_file_of_the_core_imports_the_models_or_the_pipelines():
    """Read from the source (imports inside functions too): what a run of the core may never reach."""
    found = [
        f"{path.relative_to(CORE.parent)}: {name}"
        for path in sorted(CORE.rglob("*.py"))
        for name in _imported_modules(path)
        if name.split(".")[:2] in (["axialrope", "models"], ["axialrope", "pipelines"])
    ]
    assert found == []


def test_the_source_check_sees_relative_imports_of_the_upper_layers(tmp_path):
    (tmp_path / "axialrope").mkdir()
    (tmp_path / "axialrope" / "hook.py").write_text("def f():\n    from .pipelines.dit import registration\n")
    names = _imported_modules(tmp_path / "axialrope" / "hook.py", tmp_path)
    assert "axialrope.pipelines.dit.registration" in names
