"""detect.tools.pin_outputs: clock readings never change a fingerprint; anything else does."""

from __future__ import annotations

import json
from pathlib import Path

from detect.tools.pin_outputs import fingerprint, listing


def test_clock_readings_and_the_work_folder_do_not_change_a_fingerprint(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root, seconds, rate in ((a, 1.5, 6.9), (b, 2.5, 12.1)):
        (root / "seg").mkdir(parents=True)
        (root / "seg" / "manifest.json").write_text(json.dumps(
            {"total_s": seconds, "finished_at": f"2026-11-25T04:4{int(seconds)}:00+00:00", "results": f"{root}/seg",
             "counts": {"boxes": 50}, "speed": {"images/s": rate}}))
        (root / "seg" / "report.html").write_text(
            f"<p>{rate} images/s over {seconds} s ({seconds} s in all)</p><p>finished 2026-11-25T04:4{int(seconds)}:00+00:00</p>"
            f"<tr><td>images/s</td><td data-value='{rate}'>{rate}</td></tr><a href='{root}/x'>")
    assert listing(a) == listing(b)


def test_a_changed_count_or_picture_changes_its_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"counts": {"boxes": 50}, "total_s": 1.0}))
    before = fingerprint(path, tmp_path)
    path.write_text(json.dumps({"counts": {"boxes": 51}, "total_s": 1.0}))
    assert fingerprint(path, tmp_path) != before
    picture = tmp_path / "frame.png"
    picture.write_bytes(b"\x89PNG one")
    first = fingerprint(picture, tmp_path)
    picture.write_bytes(b"\x89PNG two")
    assert fingerprint(picture, tmp_path) != first
