"""AxialDiTPipeline made findable by diffusers' `DiffusionPipeline.from_pretrained`.

    import axialrope
    from diffusers import DiffusionPipeline
    pipe = DiffusionPipeline.from_pretrained("pipelines/sampling/assets/shapes-rope")   # an AxialDiTPipeline

diffusers reads a folder's model_index.json `_class_name` and looks that name up as an
attribute of the `diffusers` module (`pipeline_loading_utils._get_pipeline_class`); a class
from another package is found only once it is set there, which `register_with_diffusers`
does. The pipeline module registers its class when it is imported. `import axialrope` calls
`register_when_diffusers_loads`, which imports nothing itself (the core stays free of
diffusers): it registers right away if diffusers' pipeline module is already loaded, and
otherwise just after diffusers loads it, so a user who never touches DiffusionPipeline pays nothing.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

PIPELINE_MODULE = "axialrope.pipelines.sampling.pipeline"
# the diffusers module that defines DiffusionPipeline: once it has run, from_pretrained can be called
DIFFUSERS_PIPELINE_MODULE = "diffusers.pipelines.pipeline_utils"
# what this project's pipeline class was called before it had a name of its own (diffusers' own DiT's name)
LEGACY_CLASS_NAMES = ("DiTPipeline",)


def register_with_diffusers(pipeline_class: type) -> None:
    """Set `pipeline_class` on the diffusers module under its name (what from_pretrained looks up)."""
    import diffusers

    setattr(diffusers, pipeline_class.__name__, pipeline_class)


def is_axialrope_index(index: dict) -> bool:
    """True if a model_index.json's transformer is an axialrope DiT (a folder this project wrote)."""
    transformer = index.get("transformer")
    return (isinstance(transformer, list) and len(transformer) == 2 and isinstance(transformer[0], str)
            and transformer[0].startswith("axialrope.") and transformer[1] == "DiT")


def _import_pipeline() -> None:
    try:
        importlib.import_module(PIPELINE_MODULE)  # defines AxialDiTPipeline and registers it
    except Exception as error:  # a broken axialrope install must not break diffusers for everyone else
        warnings.warn(f"axialrope: AxialDiTPipeline could not be registered with diffusers: {error}", stacklevel=2)


class _RegisteringLoader(importlib.abc.Loader):
    """diffusers' own loader of its pipeline module, followed by the registration."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):  # get_source, get_code, is_package ...: the real loader's
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _import_pipeline()


class _WhenDiffusersLoads(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of diffusers' pipeline module, once."""

    def find_spec(self, name, path=None, target=None):
        if name != DIFFUSERS_PIPELINE_MODULE:
            return None
        sys.meta_path.remove(self)  # once, and not for the lookup below
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


def register_when_diffusers_loads() -> None:
    """Register AxialDiTPipeline with diffusers now if its pipeline module is loaded, else once it is."""
    if DIFFUSERS_PIPELINE_MODULE in sys.modules:
        _import_pipeline()
    elif not any(isinstance(finder, _WhenDiffusersLoads) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WhenDiffusersLoads())


__all__ = ["LEGACY_CLASS_NAMES", "PIPELINE_MODULE", "is_axialrope_index", "register_when_diffusers_loads",
           "register_with_diffusers"]
