"""Output paths: checked before any work, and written so that a reader never sees half a file.

    check_output_folder(config.output_dir, "output_dir")   # training: before any data is read
    check_output_file(args.out, "--out")                  # sampling: before the model is loaded
    write_atomically(path, lambda tmp: ...)               # the file appears whole, or not at all
    write_beside(out, lambda tmp: save_grid(...))         # several files, published once all are written

The checks raise a ValueError naming the argument (a file where a folder is needed, or the
reverse; a FIFO or device; a name too long; a folder that cannot be written, tried with a probe
file that is removed at once). `publish` is the project's one way to move a finished file or
folder under its final name durably; `remove_tree` deletes a folder but never through a link.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_NAME_MAX, _PATH_MAX = 255, 4096  # where the file system does not say (pathconf)


def _exists(path: Path) -> bool:
    try:
        return path.exists() or path.is_symlink()
    except OSError:  # a name too long to look up
        return False


def _nearest_existing(path: Path) -> Path:
    """`path` itself if it exists, else its nearest existing ancestor."""
    for candidate in (path, *path.parents):
        if _exists(candidate):
            return candidate
    return Path(".")


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError, AttributeError):
        return default


def check_text_path(path: str | Path, argument: str) -> Path:
    """`path` as a Path if its name is valid UTF-8; ValueError naming `argument` if not. A run prints its paths
    and records them in text files (config.yaml, calibration.md, trackers' logs), which hold only UTF-8: a
    name of other bytes (Python's surrogate escapes) would fail there, after the work."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raw = os.fsencode(str(path))
        raise ValueError(
            f"{argument} {raw!r}: the name is not valid UTF-8; axialrope prints and records its paths as text: "
            "rename it (or link it under a UTF-8 name)"
        ) from None
    return Path(path)


def _check_names(path: Path, existing: Path, argument: str, shown: Path) -> None:
    """ValueError if a name is not valid UTF-8 or a name still to be made under `existing`, or the whole path,
    is too long."""
    check_text_path(path.absolute(), argument)
    name_max = _pathconf(existing, "PC_NAME_MAX", _NAME_MAX)
    for part in path.absolute().relative_to(existing.absolute()).parts:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(
                f"{argument} {str(shown)[:60]!r}...: the name {part[:40]!r}... has "
                f"{len(os.fsencode(part))} bytes; this file system allows {name_max}"
            )
    path_max = _pathconf(existing, "PC_PATH_MAX", _PATH_MAX)
    if len(os.fsencode(str(path.absolute()))) >= path_max:
        raise ValueError(
            f"{argument} {str(shown)[:60]!r}...: the path is longer than the {path_max} bytes this file system allows"
        )


def _check_writable(folder: Path, argument: str, shown: Path) -> None:
    """ValueError unless a file can be made in `folder` (tried: permissions, read-only file systems)."""
    try:
        descriptor, probe = tempfile.mkstemp(dir=folder, prefix=".axialrope-probe-")
    except OSError as error:
        raise ValueError(
            f"{argument} {str(shown)!r}: the folder {str(folder)!r} is not writable ({error.strerror})"
        ) from None
    os.close(descriptor)
    os.remove(probe)


def _check_makeable(folder: Path, argument: str, shown: Path) -> None:
    """ValueError unless `folder` is a folder, or one can be made there."""
    _check_names(folder, _nearest_existing(folder), argument, shown)
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        where = "is a file, not a folder" if existing == folder else f"cannot be made: {str(existing)!r} is a file"
        raise ValueError(f"{argument} {str(shown)!r}: {str(folder)!r} {where}")
    _check_writable(existing, argument, shown)


def check_output_folder(path: str | Path, argument: str) -> Path:
    """`path` as a Path if it is a writable folder or can be made one; ValueError naming `argument` if not."""
    path = Path(path)
    _check_makeable(path, argument, path)
    return path


def check_output_file(path: str | Path, argument: str) -> Path:
    """`path` as a Path if a regular file can be written there; ValueError naming `argument` if not."""
    path = Path(path)
    _check_names(path, _nearest_existing(path.parent), argument, path)
    if path.is_dir():
        raise ValueError(f"{argument} {str(path)!r} is a folder; name a file inside it")
    if _exists(path) and not path.is_file():
        raise ValueError(
            f"{argument} {str(path)!r} exists and is not a regular file (a FIFO, a device or a "
            "broken link); name a file"
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{argument} {str(path)!r} exists and is not writable")
    _check_makeable(path.parent, argument, path)
    return path


def check_name_fits(path: str | Path, argument: str) -> Path:
    """`path` as a Path if its name (and the whole path) is not too long for the file system that would hold it."""
    path = Path(path)
    _check_names(path, _nearest_existing(path.parent), argument, path)
    return path


def check_outside(out: str | Path, out_argument: str, data: str | Path, data_argument: str) -> None:
    """ValueError unless the output folder `out` lies outside the folder of images `data`: what a command writes
    there would become images of it (a picture at its top turns a folder of classes into a flat one), read by
    the next training or calibration on it."""
    where, folder = Path(out).resolve(), Path(data).resolve()
    if where == folder or folder in where.parents:
        raise ValueError(
            f"{out_argument} {str(out)!r} lies inside {data_argument} {str(data)!r}: what is written there would "
            f"become part of the images (and of any training on them); choose a folder outside it"
        )


def free_bytes(path: str | Path) -> int:
    """Free bytes on the file system that holds `path` (or would hold it: its nearest existing folder)."""
    return shutil.disk_usage(_nearest_existing(Path(path))).free


def check_free_space(path: str | Path, needed: int, argument: str, what: str) -> None:
    """ValueError naming `argument` if the file system of `path` has less than `needed` bytes free."""
    free = free_bytes(path)
    if needed > free:
        raise ValueError(
            f"{argument} {str(path)!r}: {what} needs about {needed / 2**20:.1f} MiB, the disk holding "
            f"it has {free / 2**20:.1f} MiB free"
        )


# -- durable writes ---------------------------------------------------------------------------


def fsync_path(path: str | Path) -> None:
    """Flush a file's or a folder's entry to the disk (a folder's fsync makes renames inside it durable)."""
    flags = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if Path(path).is_dir() else os.O_RDONLY
    try:
        descriptor = os.open(path, flags)
    except OSError:  # some systems cannot open folders; their renames are as durable as they get
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass  # e.g. folders on Windows; the data itself was synced as files
    finally:
        os.close(descriptor)


def remove_tree(path: str | Path) -> None:
    """Delete a folder and what it holds, or a file; a link is removed as a link, its target never touched."""
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)  # does not follow the links it meets inside


def publish(temporary: str | Path, final: str | Path) -> Path:
    """Durably move a fully written file or folder to its final name.

    fsyncs the file (or everything in the folder, then the folder), renames it over `final`
    (atomic on one file system) and fsyncs the parent, so that after a crash `final` is the
    old version or the complete new one. An old `final` folder (or a link to one) is first moved
    aside to `<final>.old.tmp` and removed once the new one is in place (a link: only the link).
    """
    temporary, final = Path(temporary), Path(final)
    if temporary.is_dir():
        for item in sorted(temporary.rglob("*"), reverse=True):  # files before the folders holding them
            fsync_path(item)
    fsync_path(temporary)
    old = None
    if temporary.is_dir() and (final.exists() or final.is_symlink()):
        old = final.with_name(final.name + ".old.tmp")
        remove_tree(old)  # left by a crash during an earlier publish
        final.rename(old)
    os.replace(temporary, final)
    fsync_path(final.parent)
    if old is not None:
        remove_tree(old)
    return final


def write_atomically(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Write a file through `write(temporary_path)` beside `path`, then `publish` it as `path`.

    A run killed mid-write leaves the previous `path` (or none), never a truncated one; the
    temporary is removed if `write` raises.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.", suffix=".tmp")
    os.close(descriptor)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o644)  # mkstemp made it private; these are ordinary files
        return publish(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


def write_text_atomically(path: str | Path, text: str) -> Path:
    """`write_atomically` for a text file."""
    return write_atomically(path, lambda temporary: temporary.write_text(text))


def write_beside(path: str | Path, write: Callable[[Path], Any]) -> Any:
    """Run `write(temporary)`, `temporary` named like `path` in a fresh folder beside it, then publish
    everything it wrote next to `path`; returns what `write` returned, its paths moved to their final
    folder. If `write` (or a move) fails, what it wrote is removed and files already there are kept."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=".axialrope-", suffix=".tmp"))
    try:
        result = write(folder / path.name)
        for item in sorted(folder.iterdir()):
            publish(item, path.parent / item.name)
    finally:
        remove_tree(folder)

    def moved(value):
        if isinstance(value, Path) and folder in value.parents:
            return path.parent / value.relative_to(folder)
        if isinstance(value, dict):
            return {key: moved(v) for key, v in value.items()}
        return value

    return moved(result)


__all__ = [
    "check_free_space",
    "check_name_fits",
    "check_output_file",
    "check_output_folder",
    "check_outside",
    "check_text_path",
    "free_bytes",
    "fsync_path",
    "publish",
    "remove_tree",
    "write_atomically",
    "write_beside",
    "write_text_atomically",
]
