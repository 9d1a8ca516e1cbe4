"""Video containers through PyAV: MP4 out of the samplers, MP4 into the video folder dataset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from axialrope.pipelines.data import folders as folder_data
from axialrope.pipelines.data import video_io
from axialrope.pipelines.data.buckets import Bucket
from axialrope.pipelines.data.folders import VideoFolderDataset
from axialrope.pipelines.data.video_io import probe_video, read_video_frames, write_mp4
from axialrope.pipelines.sampling.outputs import save_mp4, save_videos

av = pytest.importorskip("av")


def _ramp_frames(count: int, height: int, width: int) -> np.ndarray:
    """(count, height, width, 3) uint8: frame i is flat grey 20 + 25 i, with a red left half."""
    frames = np.zeros((count, height, width, 3), dtype=np.uint8)
    frames[:] = (20 + 25 * np.arange(count, dtype=np.uint8))[:, None, None, None]
    frames[:, :, : width // 2, 0] = 255
    return frames


def test_mp4_round_trip_keeps_frames_size_and_rate(tmp_path):
    frames = _ramp_frames(6, 16, 24)
    path = write_mp4(frames, tmp_path / "clip.mp4", fps=2.5)
    assert probe_video(path) == (24, 16, 6)
    with av.open(str(path)) as container:
        assert container.streams.video[0].average_rate == 2.5
    decoded = read_video_frames(path, 0, 6)
    assert decoded.shape == (6, 3, 16, 24) and decoded.dtype == torch.uint8
    reference = torch.from_numpy(frames).permute(0, 3, 1, 2).int()
    assert (decoded.int() - reference).abs().float().mean() < 3  # H.264 at crf 12: near-lossless


def test_odd_sides_gain_one_edge_pixel(tmp_path):
    path = write_mp4(_ramp_frames(2, 9, 11), tmp_path / "odd.mp4", fps=4)
    assert probe_video(path)[:2] == (12, 10)  # yuv420p needs even sides


def test_reading_a_window_and_past_the_end(tmp_path):
    path = write_mp4(_ramp_frames(6, 16, 16), tmp_path / "clip.mp4", fps=4)
    window = read_video_frames(path, 2, 3)
    grey = window[:, 1, 8, 12].float()  # green channel of the right half: 20 + 25 i
    assert torch.allclose(grey, torch.tensor([70.0, 95.0, 120.0]), atol=4)
    with pytest.raises(ValueError, match="has 6 frames, asked for 8"):
        read_video_frames(path, 4, 4)


def test_bad_files_and_arguments_fail_clearly(tmp_path):
    (tmp_path / "x.mp4").write_bytes(b"\0" * 16)
    with pytest.raises(ValueError, match="cannot read video .*x.mp4"):
        probe_video(tmp_path / "x.mp4")
    with pytest.raises(ValueError, match="fps must be positive"):
        write_mp4(_ramp_frames(2, 8, 8), tmp_path / "y.mp4", fps=0)


def test_sampler_outputs_include_an_mp4_of_the_side_by_side_clips(tmp_path):
    videos = torch.rand(2, 5, 3, 8, 8)  # (b, t, c, h, w)
    written = save_videos(videos, tmp_path / "clip.png", fps=4)
    assert probe_video(written["mp4"]) == (2 * 8 + 3 * 2, 8 + 2 * 2, 5)  # the GIF's grid, frame for frame


def test_video_folder_reads_mp4_files(tmp_path):
    write_mp4(_ramp_frames(6, 20, 30), tmp_path / "a.mp4", fps=4)
    data = VideoFolderDataset(tmp_path, default_bucket=Bucket(16, 16, frames=4))
    assert data.frame_counts == [6] and data.sizes == [(30, 20)]
    clip = data[0]["pixel_values"]  # (c, t, h, w) in [-1, 1]
    assert clip.shape == (3, 4, 16, 16)
    steps = clip[1, 1:, 8, -1] - clip[1, :-1, 8, -1]  # consecutive frames: +25 / 255 in [0, 1]
    assert torch.allclose(steps, torch.full_like(steps, 2 * 25 / 255), atol=0.03)


def test_without_pyav_the_errors_say_what_to_install(tmp_path, monkeypatch):
    write_mp4(_ramp_frames(2, 8, 8), tmp_path / "a.mp4", fps=4)
    monkeypatch.setattr(video_io, "av_available", lambda: False)
    monkeypatch.setattr(folder_data, "av_available", lambda: False)
    with pytest.raises(RuntimeError, match="pip install av"):
        save_mp4(torch.rand(2, 3, 8, 8), tmp_path / "out" / "b.mp4")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="a.mp4 need PyAV"):
        VideoFolderDataset(tmp_path)
