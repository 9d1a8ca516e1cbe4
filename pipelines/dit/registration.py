"""How diffusers' `DiffusionPipeline.from_pretrained` finds AxialDiTPipeline.

    from axialrope.pipelines import AxialDiTPipeline    # the import registers the class
    from diffusers import DiffusionPipeline
    pipe = DiffusionPipeline.from_pretrained("pipelines/dit/assets/shapes-rope")   # an AxialDiTPipeline

diffusers reads a folder's model_index.json `_class_name` and looks that name up as an attribute
of the `diffusers` module (`pipeline_loading_utils._get_pipeline_class`). The only other route it
offers, a pipeline .py file inside the folder, runs code from the folder and needs
`trust_remote_code=True`. So the pipeline module sets its class on the diffusers module when it is
imported (`register_with_diffusers`): importing the class is what a user does first.
`AxialDiTPipeline.from_pretrained(folder)` needs no registration at all.
"""

from __future__ import annotations

# what this project's pipeline class was called before it had a name of its own (diffusers' own DiT's name)
LEGACY_CLASS_NAMES = ("DiTPipeline",)


def register_with_diffusers(pipeline_class: type) -> None:
    """Set `pipeline_class` on the diffusers module under its name (what from_pretrained looks up)."""
    import diffusers  # heavy: keeps --help fast

    setattr(diffusers, pipeline_class.__name__, pipeline_class)


def is_axialrope_index(index: dict) -> bool:
    """True if a model_index.json's transformer is an axialrope DiT (a folder this project wrote)."""
    transformer = index.get("transformer")
    return (
        isinstance(transformer, list)
        and len(transformer) == 2
        and isinstance(transformer[0], str)
        and transformer[0].startswith("axialrope.")
        and transformer[1] == "DiT"
    )


__all__ = ["LEGACY_CLASS_NAMES", "is_axialrope_index", "register_with_diffusers"]
