"""Video containers (MP4, WebM, MOV, ...) through PyAV, an optional dependency.

torchvision no longer reads or writes videos itself, so the container formats go straight
to PyAV (`pip install "axialrope[video]"`). Without it, GIF and frame folders still work
everywhere; these functions then raise a RuntimeError that says what to install.

Frames are uint8 (t, h, w, 3) arrays on the way out and (t, 3, h, w) tensors on the way in.
"""

from __future__ import annotations

import importlib.util
from fractions import Fraction
from pathlib import Path

import numpy as np
import torch

CONTAINER_EXTENSIONS = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v")


def av_available() -> bool:
    """True if PyAV is installed."""
    return importlib.util.find_spec("av") is not None


def require_av(what: str):
    """The `av` module; RuntimeError naming `what` and the package to install if PyAV is missing."""
    if not av_available():
        raise RuntimeError(
            f"{what} needs PyAV: pip install av (or axialrope[video]); GIF and frame folders need nothing"
        )
    import av  # optional: absent unless installed

    return av


def write_mp4(pixels: np.ndarray, path: str | Path, fps: float) -> Path:
    """Write uint8 frames (t, h, w, 3) as an H.264 MP4 (yuv420p, so odd sides gain one edge pixel).

    The parent folder is made only once PyAV and fps have been checked.
    """
    av = require_av("writing MP4")
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    pad_h, pad_w = pixels.shape[1] % 2, pixels.shape[2] % 2  # yuv420p subsamples chroma by 2 on each side
    pixels = np.pad(pixels, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height, stream.pix_fmt = pixels.shape[2], pixels.shape[1], "yuv420p"
        stream.options = {"crf": "12"}  # near-lossless: samples are small, their detail is the point
        for frame in pixels:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())  # flush the encoder's delayed frames
    return Path(path)


def probe_video(path: str | Path) -> tuple[int, int, int]:
    """(width, height, frame count) of a video file; ValueError if it cannot be read."""
    av = require_av(f"reading {Path(path).suffix} videos")
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            count = stream.frames or sum(1 for packet in container.demux(stream) if packet.size)  # some muxers omit it
            return stream.codec_context.width, stream.codec_context.height, count
    except (av.error.FFmpegError, IndexError) as error:
        raise ValueError(f"cannot read video {str(path)!r}: {error}") from error


def read_video_frames(path: str | Path, start: int, count: int) -> torch.Tensor:
    """(count, 3, h, w) uint8: frames start .. start + count - 1 of a video file, decoded in order."""
    av = require_av(f"reading {Path(path).suffix} videos")
    frames = []
    with av.open(str(path)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            if index >= start:
                frames.append(torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1))
            if len(frames) == count:
                break
    if len(frames) < count:
        raise ValueError(f"video {str(path)!r} has {start + len(frames)} frames, asked for {start + count}")
    return torch.stack(frames)


__all__ = ["CONTAINER_EXTENSIONS", "av_available", "require_av", "probe_video", "read_video_frames", "write_mp4"]
