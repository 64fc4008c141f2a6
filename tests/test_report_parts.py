"""The report's parts on tiny crafted inputs: the index's model and threshold
columns."""

from __future__ import annotations

import json

from detect.report.pages import index_page


def test_the_index_shows_each_segments_model_and_drawing_threshold(tmp_path):
    def manifest(name, model, threshold):
        directory = tmp_path / name
        directory.mkdir()
        content = {"segment_context_name": name, "status": "complete", "model": model,
                   "settings": {"draw": {"threshold": threshold}}}
        (directory / "manifest.json").write_text(json.dumps(content))
        return directory, content

    segments = [manifest("a", {"short_name": "CenterNet MobileNetV3", "description": "CenterNet <long>"}, 0.3),
                manifest("b", {"short_name": None, "description": "stub model"}, "0.3"),
                manifest("c", "not a model", True)]
    html = index_page(tmp_path, segments, []).read_text()
    assert "<th>model</th><th>threshold</th>" in html
    assert "<td><span title='CenterNet &lt;long&gt;'>CenterNet MobileNetV3</span></td><td>0.30</td>" in html
    assert "<td><span title='stub model'>stub model</span></td><td>-</td>" in html  # a threshold that is not a number
    assert "<td>-</td><td>-</td>" in html
    assert "<h1>detect run: 3 segments</h1>" in html and "<title>detect: 3 segments</title>" in html
    one = index_page(tmp_path, segments[:1], []).read_text()
    assert "<h1>detect run: 1 segment</h1>" in one and "<title>detect: 1 segment</title>" in one
