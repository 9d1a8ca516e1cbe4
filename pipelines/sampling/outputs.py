"""Writing samples to disk: image grids, and videos as GIF, MP4 and PNG frames.

All functions take the pipeline's "pt" output: images (b, c, h, w) or videos (b, t, c, h, w),
float in [0, 1]. GIFs go through diffusers' `export_to_gif`. MP4 stays with PyAV (the `video`
extra, which also reads training clips): diffusers' `export_to_video` needs imageio with
imageio-ffmpeg, or OpenCV, neither of which this project depends on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import PIL.Image
import torch
from diffusers.utils import export_to_gif
from einops import rearrange
from torchvision.utils import make_grid, save_image

from ..data.video_io import av_available, write_mp4

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
VIDEO_SUFFIXES = (".png", ".gif", ".mp4")  # any of them writes all the video outputs, see save_videos


def check_output_path(path: str | Path, video: bool) -> Path:
    """`path` as a Path if its suffix names an output this module writes; ValueError before any sampling if not."""
    path = Path(path)
    suffixes = VIDEO_SUFFIXES if video else IMAGE_SUFFIXES
    if path.suffix.lower() not in suffixes:
        kind = "a video model's" if video else "an image model's"
        raise ValueError(f"--out {str(path)!r}: {kind} output must end in one of {', '.join(suffixes)}")
    if path.suffix.lower() == ".mp4" and not av_available():
        raise ValueError(f"--out {str(path)!r}: writing MP4 needs PyAV (pip install av); use .gif or .png")
    return path


def save_grid(images: torch.Tensor, path: str | Path, per_row: int = 8, padding: int = 2) -> Path:
    """Save images (b, c, h, w) in [0, 1] as one PNG grid of `per_row` columns; returns the path."""
    path = _parent_made(path)
    save_image(images.float().cpu(), str(path), nrow=per_row, padding=padding)
    return path


def video_grid(videos: torch.Tensor, padding: int = 2) -> torch.Tensor:
    """(b, t, c, h, w) -> (t, c, H, W): frame i of every video side by side, one row."""
    return torch.stack(
        [make_grid(videos[:, i].float().cpu(), nrow=videos.shape[0], padding=padding) for i in range(videos.shape[1])]
    )


def to_uint8_frames(frames: torch.Tensor) -> np.ndarray:
    """(t, c, h, w) in [0, 1] -> (t, h, w, c) uint8."""
    return (rearrange(frames.float().clamp(0, 1).cpu(), "t c h w -> t h w c").numpy() * 255).round().astype(np.uint8)


def save_gif(frames: torch.Tensor, path: str | Path, fps: float = 4.0) -> Path:
    """Save frames (t, c, h, w) in [0, 1] as a looping GIF."""
    path = _parent_made(path)
    export_to_gif([PIL.Image.fromarray(frame) for frame in to_uint8_frames(frames)], str(path), fps=fps)
    return path


def save_mp4(frames: torch.Tensor, path: str | Path, fps: float = 4.0) -> Path:
    """Save frames (t, c, h, w) in [0, 1] as an H.264 MP4; RuntimeError if PyAV is missing."""
    # PyAV, not diffusers' export_to_video: that needs imageio-ffmpeg or OpenCV (not dependencies here)
    return write_mp4(to_uint8_frames(frames), path, fps)


def save_frames(frames: torch.Tensor, folder: str | Path) -> list[Path]:
    """Save frames (t, c, h, w) in [0, 1] as folder/frame_000.png, ...; returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, frame in enumerate(to_uint8_frames(frames)):
        paths.append(folder / f"frame_{index:03d}.png")
        PIL.Image.fromarray(frame).save(paths[-1])
    return paths


def save_videos(videos: torch.Tensor, path: str | Path, fps: float = 4.0, mp4: bool = True) -> dict[str, Path]:
    """Save videos (b, t, c, h, w) in [0, 1], all side by side: `path` (.png: one row per frame, or .gif),
    and next to it <stem>.gif, <stem>.mp4 (if PyAV is installed and `mp4`) and <stem>_frames/.

    Returns the written paths by kind ("grid", "gif", "mp4", "frames").
    """
    path = Path(path)
    frames = video_grid(videos)  # (t, c, H, W)
    written = {"gif": save_gif(frames, path.with_suffix(".gif"), fps)}
    if path.suffix.lower() != ".gif":
        written["grid"] = save_grid(frames, path.with_suffix(".png"), per_row=1, padding=0)
    if mp4 and av_available():
        written["mp4"] = save_mp4(frames, path.with_suffix(".mp4"), fps)
    written["frames"] = save_frames(frames, path.with_name(path.stem + "_frames"))[0].parent
    return written


def _parent_made(path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


__all__ = [
    "IMAGE_SUFFIXES",
    "VIDEO_SUFFIXES",
    "check_output_path",
    "save_frames",
    "save_gif",
    "save_grid",
    "save_mp4",
    "save_videos",
    "to_uint8_frames",
    "video_grid",
]
