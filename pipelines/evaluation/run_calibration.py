"""Calibrate a trained model where it lives: a training run (or a pipeline folder), its pictures and its default.

    job = prepare("outputs/photos", reference_dir=None, scales=[1.5, 2, 3])   # every check, before any work
    result = job.run()                          # the table printed; calibration.{md,json}, calibration-HxW.png
                                                # in job.out; the bands in the run's pipeline/ and pipeline-config/

`axialrope calibrate` and `axialrope train --calibrate-scales` run this. The references default to the run's
training folder (data=image_folder); the bands go into every pipeline folder of the run, so the run, its
checkpoints and its model folders all load with them. Where no real images serve every size (no --reference-dir,
and the run records no training folder, its folder is gone, or fewer than 2 of its images are large enough for
some size) and for a video model, the calibration uses the reference-free score (`self_reference`: the model's
own samples at its trained size) and says so.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..dit.bundled import load_pipeline
from ..dit.default_extrapolation import check_defaults_writable, write_default_extrapolations
from ..dit.runs import PIPELINE, PIPELINE_CONFIG, find_in_run
from ..paths import check_output_folder, check_outside, check_text_path, write_atomically, write_text_atomically
from ..publishing import OutputSet
from ..training.config import read_config_file
from ..training.data_record import check_same_data
from .calibrate import (
    DEFAULT_NUM,
    DEFAULT_SCALES,
    DEFAULT_SEEDS,
    DEFAULT_STEPS,
    SELF,
    Calibration,
    check_scales,
    measure,
    plan,
    size_text,
    target_sizes,
)
from .grids import save_labelled_grid
from .references import ReferenceImages

RESULT_FOLDER = "calibration"
RESULT_FILES = ("calibration.md", "calibration.json", "calibration-*.png")  # one set: published together


def run_folders(model: str | Path) -> tuple[Path | None, list[Path]]:
    """(the training run `model` belongs to, or None for a plain pipeline folder; the pipeline folders whose
    model_index.json records the default). ValueError for anything else."""
    path = Path(model)
    if not path.is_dir():
        raise FileNotFoundError(f"--model {str(model)!r}: no such folder; give a training run or a pipeline folder")
    found = find_in_run(path)
    if found is None:
        if (path / "model_index.json").is_file():
            return None, [path]
        raise ValueError(
            f"--model {str(model)!r} is neither a training run (or one of its checkpoints or model "
            "folders) nor a pipeline folder (model_index.json)"
        )
    kind, source, config_folder = found
    run = source.parent if kind == "pipeline" else config_folder.parent
    folders = [run / name for name in (PIPELINE, PIPELINE_CONFIG) if (run / name / "model_index.json").is_file()]
    return run, folders


def training_folder(run: Path | None) -> tuple[str | None, str]:
    """(the image folder a run was trained on (its config.yaml), for --reference-dir's default, and ""); or (None,
    why there is none)."""
    recorded = {} if run is None or not (run / "config.yaml").is_file() else read_config_file(run / "config.yaml")
    if recorded.get("data") != "image_folder" or not recorded.get("data_dir"):
        what = f"was trained on data={recorded['data']!r}" if recorded.get("data") else "records no training folder"
        return None, f"this model {what}"
    return str(recorded["data_dir"]), ""


@dataclass
class Job:
    """A checked calibration: the pipeline, its references (None: the reference-free score), where the default and
    the results go."""

    pipe: object
    references: ReferenceImages | None
    reference_dir: str
    folders: list[Path]
    out: Path
    settings: dict
    report: Callable[[str], None] = print
    run_folder: Path | None = None

    @property
    def results(self):
        """The results in `out` as one set (`publishing.OutputSet`): a new calibration replaces every file of the
        previous one at once (its report, its pictures), never some of them. Enter it to hold it early."""
        if getattr(self, "_results", None) is None:
            self._results = OutputSet(self.out, RESULT_FOLDER, argument="--out", report=self.report)
        return self._results

    def run(self, progress: bool = True) -> Calibration:
        """Measure and print the table; then save the results and record the bands in every pipeline folder, both
        or neither (the folders were found writable before the work; a write that fails now undoes the others)."""
        result = measure(self.pipe, self.references, progress=progress, source=self.reference_dir, **self.settings)
        self.report(result.table())
        unclear = ", ".join(f"{r.scale:g}x" for r in result.unclear)
        if unclear:
            self.report(
                f"at {unclear} the best method's interval does not clear the runner-up's: more --seeds or "
                "--num would tell them apart (the pick stands, as the lowest mean)"
            )
        if result.reference == SELF:
            self.report(
                "scored without real images (the reference-free score): where you have real images at these sizes, "
                "--reference-dir measures against them, the path to trust (docs/extrapolation.md)"
            )
        previous = _recorded_calibration(self.folders)

        def stage(staging: Path) -> None:  # the results first, whole; the defaults next; then the results publish
            save_results(result, staging)
            write_default_extrapolations(self.folders, result.bands)

        with contextlib.nullcontext() if self.results.lock.held else self.results:
            self.results.publish(RESULT_FILES, stage)
        where = ", ".join(str(f) for f in self.folders)
        replaced = f", replacing the {previous} of an earlier calibration" if previous else ""
        self.report(
            f"wrote {self.out}/calibration.md, calibration.json and {len(result.scales)} "
            f"picture{'s' if len(result.scales) != 1 else ''}; "
            f"default_extrapolation recorded in {where}{replaced}"
        )
        return result


def _recorded_calibration(folders: list[Path]) -> str | None:
    """ "3 bands" if the first folder's default_extrapolation was measured by a calibration, else None."""
    index = folders[0] / "model_index.json"
    try:
        bands = json.loads(index.read_text()).get("default_extrapolation") or []
    except (OSError, ValueError, AttributeError):
        return None
    measured = [band for band in bands if isinstance(band, dict) and "measured" in band]
    return f"{len(measured)} band{'s' if len(measured) != 1 else ''}" if measured else None


def prepare(
    model: str | Path,
    reference_dir: str | None = None,
    scales: Sequence[float] = DEFAULT_SCALES,
    methods: Sequence[str] | None = None,
    num: int = DEFAULT_NUM,
    steps: int = DEFAULT_STEPS,
    seeds: int = DEFAULT_SEEDS,
    guidance: float | None = None,
    out: str | Path | None = None,
    device: str = "auto",
    report: Callable[[str], None] = print,
) -> Job:
    """Every check of a calibration, before any work (ValueError, FileNotFoundError naming the flag): the model,
    the references at every size, the methods and counts, memory, the output folder. Without --reference-dir the
    run's training folder serves if at least 2 of its images are large enough for every size; otherwise, and for
    a video model, the calibration uses the reference-free score, and `report` says why."""
    check_text_path(model, "--model")  # the report names it
    run, folders = run_folders(model)
    if reference_dir is not None:
        check_text_path(reference_dir, "--reference-dir")  # calibration.md names it
    if out is not None and not str(out).strip():
        raise ValueError("--out must name a folder, got an empty path (it would be the current folder)")
    out = (
        Path(out)
        if out is not None
        else (run / RESULT_FOLDER if run is not None else folders[0].with_name(folders[0].name + "-" + RESULT_FOLDER))
    )
    check_output_folder(out, "--out")
    if reference_dir is not None:
        check_outside(out, "--out", reference_dir, "--reference-dir")  # its pictures would join the images
    check_defaults_writable(folders, "--model")  # both pipeline folders, before any work: never one of them
    pipe = load_pipeline(str(model), device)
    if pipe.is_video and reference_dir is not None:
        raise ValueError(
            "--reference-dir: real clips are not read; a video model is calibrated by the reference-free score "
            "(its own samples at the trained size), in time: leave --reference-dir out"
        )
    settings = dict(scales=scales, methods=methods, num=num, steps=steps, seeds=seeds, guidance=guidance)
    references, source, why = _references(pipe, run, out, reference_dir, scales)
    scales, methods, guidance, sizes = _flagged(plan, pipe, references, **settings)
    if why:  # said once every check has passed: a refused calibration prints its one error line only
        report(why)
    if references is not None:
        for (height, width), (usable, small) in references.check(list(sizes.values())).items():
            if small:
                report(
                    f"{height}x{width}: {small} of {len(references)} reference images are too small, skipped "
                    f"({usable} serve it)"
                )
    settings.update(scales=scales, methods=methods, guidance=guidance)
    return Job(pipe, references, source, folders, out, settings, report, run)


def _references(
    pipe, run: Path | None, out: Path, reference_dir: str | None, scales
) -> tuple[ReferenceImages | None, str, str]:
    """(the real images to score against, how the notes name them, ""); or (None, "", the line that says why) for
    the reference-free score. --reference-dir is taken as given (a size it cannot serve is refused
    by `plan`); the run's training folder serves only if it is the data the run read and serves every size."""
    free = (
        "calibrating with the reference-free score (the model's own samples at its trained size; "
        'docs/extrapolation.md, "Calibrating without real images")'
    )
    if pipe.is_video:
        return None, "", f"a video model: {free}, in time (its scales lengthen the clip)"
    classes = pipe.config.class_names, pipe.transformer.config.num_classes
    if reference_dir is not None:
        return ReferenceImages(reference_dir, *classes, argument="--reference-dir"), str(reference_dir), ""
    folder, why = training_folder(run)
    if folder is not None and not Path(folder).is_dir():
        folder, why = None, f"its training folder {folder} is gone"
    if folder is None:
        return None, "", f"no --reference-dir, and {why}: {free}; give --reference-dir to score against real images"
    check_text_path(folder, "--reference-dir")  # calibration.md names it
    check_outside(out, "--out", folder, "--reference-dir")  # its pictures would join the images
    references = ReferenceImages(folder, *classes, argument="--reference-dir")
    check_same_data(run, references.dataset, "calibrate", "--reference-dir")
    patch = pipe.transformer.patchify.patch
    sizes = _flagged(target_sizes, pipe.trained_size, patch, _flagged(check_scales, scales)).values()
    for size in [tuple(pipe.trained_size), *sizes]:
        usable, small = references.usable(*size)
        if len(usable) < 2:
            return (
                None,
                "",
                f"too few real images: {len(usable)} of the {len(references)} images of {folder} are large enough "
                f"for {size_text(size)} ({small} too small); {free}; give --reference-dir with larger images to "
                "score against real ones",
            )
    return references, folder, ""


def _flagged(check, *args, **kwargs):
    """`check(...)`, its ValueError naming the CLI's flags (--num, --scales) rather than the arguments."""
    try:
        return check(*args, **kwargs)
    except ValueError as error:
        text = str(error)
        for name in ("num/scales", "scales", "methods", "num", "steps", "seeds", "guidance"):
            if text.startswith(name):
                text = "--" + text
                break
        raise ValueError(text) from None


def check_training_data(dataset, config) -> None:
    """Before training: ValueError unless the folder `dataset` serves every size `config.calibrate_scales` asks
    for (at least 2 images large enough for each)."""
    bucket = config.buckets[0]
    scales = check_scales(config.calibrate_scales, "calibrate_scales")
    patch = (config.patch_size, config.patch_size)
    sizes = target_sizes((bucket.height, bucket.width), patch, scales, "calibrate_scales")
    ReferenceImages(dataset, argument="calibrate_scales: data_dir").check(list(sizes.values()))


def save_results(result: Calibration, out: Path) -> None:
    """calibration.md (the table and the bands), calibration.json (every value) and one labelled picture per size
    (RESULT_FILES), each written atomically; `Job.run` writes them into a staging folder and publishes them as one."""
    out.mkdir(parents=True, exist_ok=True)
    bands = "\n".join(
        f"- up to {b['up_to_scale'] or 'any scale'}: {b['method']}"
        f"{' + entropy scaling' if b['entropy_scaling'] else ''} ({b['measured']})"
        for b in result.bands
    )
    title = (
        "Calibration by the reference-free score (no real images: the model's own samples at its trained size)"
        if result.reference == SELF
        else f"Calibration on {result.source}"
    )
    write_text_atomically(
        out / "calibration.md", f"# {title}\n\n{result.table()}\n## default_extrapolation\n\n{bands}\n"
    )
    write_text_atomically(out / "calibration.json", json.dumps(result.to_dict(), indent=2) + "\n")
    trained = size_text(result.trained_size)
    for scale in result.scales:
        size = size_text(scale.size)
        frame = ", the last frame" if len(scale.size) == 3 else ""
        title = f"{scale.scale:g}x: {size} from {trained}, seed 0{frame}; best {scale.best[0]}"
        write_atomically(
            out / f"calibration-{size}.png",
            lambda path, s=scale, t=title: save_labelled_grid(path, t, s.pictures, per_row=min(8, result.num)),
        )


__all__ = [
    "RESULT_FILES",
    "RESULT_FOLDER",
    "Job",
    "check_training_data",
    "prepare",
    "run_folders",
    "save_results",
    "training_folder",
]
