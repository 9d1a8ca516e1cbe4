"""The benchmark's report picks the fallback by the smallest worst-case ratio to each kind's best."""

import csv
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))  # scripts, imported by bare name
import extrapolation_report as report  # noqa: E402

# mean detail SWD per (data, method) at every size, the same for every seed: "steady" is never best but never
# far (1.10x everywhere); "sharp" is best on shapes and textures but 2x the best on photographs
MEANS = {
    "shapes": {"none": 200.0, "sharp": 100.0, "steady": 110.0},
    "textures": {"none": 100.0, "sharp": 100.0, "steady": 110.0},
    "photographs": {"none": 100.0, "sharp": 200.0, "steady": 110.0},
}


def write_raw(folder: Path, kinds: dict, sizes=("48x48", "64x64", "96x96"), only: dict | None = None) -> None:
    """Raw values of `kinds` at `sizes` (`only`: data -> its own sizes), 3 seeds, as the benchmark's parts write."""
    (folder / "raw").mkdir(parents=True)
    rows = [report_header()]
    for data, methods in kinds.items():
        for size in (only or {}).get(data, sizes):
            for seed in range(3):
                rows += [[data, "rope", method, size, seed, "swd_detail", value] for method, value in methods.items()]
                rows.append([data, "real", "floor", size, seed, "swd_detail", 50.0])
    with open(folder / "raw" / "all.csv", "w", newline="") as f:
        csv.writer(f).writerows(rows)


def report_header() -> list[str]:
    return ["data", "model", "method", "size", "seed", "metric", "value"]


def test_the_fallback_is_the_method_with_the_smallest_worst_ratio_over_every_kind(tmp_path):
    write_raw(tmp_path, MEANS)
    results = report.Results(report.read_raw(tmp_path))
    bands = report.fallback_bands(results)
    assert [b["method"] for b in bands] == ["steady"] * 3
    assert "at most 1.10x" in bands[0]["measured"] and "shapes, photographs, textures" in bands[0]["measured"]
    report.fallback_table(results, tmp_path)
    table = (tmp_path / "extrapolation_fallback.md").read_text()
    assert "| method | shapes | photographs | textures | worst |" in table
    assert "| **steady** | 1.10 | 1.10 | 1.10 | 1.10 |" in table and "| sharp | 1.00 | 2.00 | 1.00 | 2.00 |" in table


def test_with_two_kinds_the_method_best_on_both_wins(tmp_path):
    write_raw(tmp_path, {k: v for k, v in MEANS.items() if k != "photographs"})
    bands = report.fallback_bands(report.Results(report.read_raw(tmp_path)))
    assert [b["method"] for b in bands] == ["sharp"] * 3


def test_a_kind_without_a_size_in_a_band_is_left_out_of_that_band_only(tmp_path):
    write_raw(tmp_path, MEANS, only={"photographs": ("48x48", "64x64")})  # no photographs beyond 2.5x
    bands = report.fallback_bands(report.Results(report.read_raw(tmp_path)))
    assert [(b["up_to_scale"], b["method"]) for b in bands] == [(1.75, "steady"), (2.5, "steady"), (None, "sharp")]
    assert "on shapes, textures (none" in bands[2]["measured"]
