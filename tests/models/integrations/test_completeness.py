"""The registry's reach: every model class of the installed diffusers with rotary positions is a
registered family, a class listed in `registry.UNREACHED` with its reason, or a multi-ControlNet
whose nets `apply_extrapolation` patches one by one."""

import importlib
import importlib.util
import inspect
import pkgutil
import re

from axialrope.models.integrations.registry import UNREACHED, family_for_class

ROPE_WORDS = re.compile(r"rotary|(?<!p)rope", re.IGNORECASE)


def _rope_modules():
    """The modules of diffusers' models/transformers and models/controlnets whose source speaks of
    rotary positions (rope, rotary; not the "rope" inside "proper", which alone names RFD4-Proteina,
    a protein model without rotary positions)."""
    import diffusers.models.controlnets as controlnets
    import diffusers.models.transformers as transformers

    for package in (transformers, controlnets):
        for info in pkgutil.iter_modules(package.__path__):
            name = f"{package.__name__}.{info.name}"
            with open(importlib.util.find_spec(name).origin, encoding="utf-8") as source:
                if ROPE_WORDS.search(source.read()):
                    yield importlib.import_module(name)


def _model_classes(module):
    """The ModelMixin subclasses a module defines (not those it imports)."""
    from diffusers import ModelMixin

    return [
        cls
        for cls in vars(module).values()
        if inspect.isclass(cls) and cls.__module__ == module.__name__ and issubclass(cls, ModelMixin)
    ]


def _is_multi_controlnet(cls) -> bool:
    """A wrapper holding its ControlNets in `self.nets` (apply_extrapolation reaches each of them)."""
    return "self.nets" in inspect.getsource(cls.__init__)


def _covered(cls) -> bool:
    return any(family_for_class(base.__name__) is not None for base in cls.__mro__)


def test_every_diffusers_model_with_a_rope_is_reached_or_listed_unreached():
    classes = [cls for module in _rope_modules() for cls in _model_classes(module)]
    assert len(classes) > 50  # the scan sees diffusers' rope models (69 in 0.42.1)
    missing = sorted(
        cls.__name__ for cls in classes if not (_covered(cls) or cls.__name__ in UNREACHED or _is_multi_controlnet(cls))
    )
    assert not missing, f"neither a registered family nor in registry.UNREACHED: {missing}"


def test_the_scan_tells_a_multi_controlnet_from_a_controlnet():
    from diffusers import FluxControlNetModel, FluxMultiControlNetModel, QwenImageMultiControlNetModel

    assert _is_multi_controlnet(FluxMultiControlNetModel) and _is_multi_controlnet(QwenImageMultiControlNetModel)
    assert not _is_multi_controlnet(FluxControlNetModel)


def test_the_scan_reads_rope_words_only():
    assert ROPE_WORDS.search("self.rope = WanRotaryPosEmbed(...)") and ROPE_WORDS.search("QwenEmbedRope")
    assert not ROPE_WORDS.search("a proper rotation, a property")
