"""Where a run's data is and what it read: recorded at the run's start, checked by its resumes and calibrations.

    config = with_absolute_data_dir(config)      # config.yaml and checkpoints record the folder absolute
    write_data_record(output, dataset)           # <run>/data.json: the folder, its file count, a fingerprint
    check_resume_data(checkpoint, config, dataset, report)   # a resume on other data is refused, naming both

A relative data_dir means another folder when a run is resumed (or calibrated) from another working folder, and
the same folder may hold other files by then. The fingerprint is a SHA-256 over what the dataset read of every
item (its path in the folder, the SHA-256 of its bytes, its picture size and its class), so a resume that would
train on other data stops before any work and names both folders; the same files moved elsewhere are the same data.
Procedural data (shapes, textures, ...) is a function of the config and has no record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from ..paths import write_text_atomically

DATA_RECORD = "data.json"


class OtherDataError(ValueError):
    """A resume or a calibration would read other data than the run trained on."""


def with_absolute_data_dir(config):
    """`config` with its data_dir made absolute (unchanged without one)."""
    if not config.data_dir:
        return config
    return dataclasses.replace(config, data_dir=os.path.abspath(config.data_dir))


def describe_data(dataset) -> dict | None:
    """{"data_dir": the folder, absolute; "items": how many; "fingerprint": SHA-256 hex} of a folder dataset, or
    None for procedural data."""
    root = getattr(dataset, "root", None)
    if root is None:
        return None
    digest = hashlib.sha256()
    items = _items(dataset)
    for item in items:
        digest.update(json.dumps(item).encode() + b"\n")
    return {"data_dir": os.path.abspath(root), "items": len(items), "fingerprint": digest.hexdigest()}


def _items(dataset) -> list:
    """What the dataset read of each item: [path(s) relative to its folder, their bytes' SHA-256, (width, height),
    class]."""
    root = Path(dataset.root)
    files = getattr(dataset, "paths", None) or getattr(dataset, "videos", [])
    labels = dataset.labels.tolist() if getattr(dataset, "labels", None) is not None else [None] * len(files)
    items = []
    for entry, size, label in zip(files, dataset.sizes, labels, strict=True):
        paths = entry if isinstance(entry, list) else [entry]
        names = [os.path.relpath(path, root) for path in paths]
        names = [name.encode("utf-8", "surrogateescape").hex() for name in names]  # any bytes a name holds
        items.append([names, [_file_digest(path) for path in paths], list(size), label])
    return items


def _file_digest(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_data_record(output: str | Path, dataset) -> None:
    """Write <output>/data.json for a folder dataset (atomically); nothing for procedural data."""
    record = describe_data(dataset)
    if record is not None:
        write_text_atomically(Path(output) / DATA_RECORD, json.dumps(record, indent=2) + "\n")


def recorded_data(run: str | Path) -> dict | None:
    """The data.json of run folder `run`, or None (a run of procedural data, or one from before the records)."""
    try:
        record = json.loads((Path(run) / DATA_RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "fingerprint" in record else None


def check_same_data(run: str | Path, dataset, what: str, argument: str = "--data-dir") -> dict | None:
    """OtherDataError naming both folders if `dataset` is not the data run `run` recorded; the record (None where
    the run recorded none: nothing to compare with). `what`: "resume" or "calibrate", and the flag `argument` that
    names the data, for the message."""
    record = recorded_data(run)
    if record is None:
        return None
    now = describe_data(dataset)
    if now is None or now["fingerprint"] != record["fingerprint"]:
        where = now["data_dir"] if now is not None else "procedural data"
        count = f" ({now['items']} items)" if now is not None else ""
        raise OtherDataError(
            f"{what}: the run trained on {record['data_dir']!r} ({record['items']} items, fingerprint "
            f"{record['fingerprint'][:12]}), but {argument} {where!r}{count} holds other files"
            f"{'' if now is None else ', fingerprint ' + now['fingerprint'][:12]}: give {argument} "
            f"{record['data_dir']} (or the folder it moved to), or start a new run on the new data"
        )
    return record


def check_resume_data(checkpoint, config, dataset, report: Callable[[str], None]) -> None:
    """Before a resume: OtherDataError if `dataset` is not what the checkpoint's run trained on (its data.json). The
    same files in another folder are the same data: the resume goes on there, says so, and the checkpoint's
    recorded data_dir is taken as the new one (so that the move is no refused change of the run's settings)."""
    run = Path(checkpoint.folder).parent.parent
    record = check_same_data(run, dataset, "resume")
    if record is None:
        return
    now = os.path.abspath(dataset.root)
    if now != record["data_dir"]:
        report(f"resume: the run's data moved from {record['data_dir']!r} to {now!r} (the same files); goes on there")
        checkpoint.trainer["config"]["data_dir"] = config.data_dir


__all__ = [
    "DATA_RECORD",
    "OtherDataError",
    "check_resume_data",
    "check_same_data",
    "describe_data",
    "recorded_data",
    "with_absolute_data_dir",
    "write_data_record",
]
