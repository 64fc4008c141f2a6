"""The error galleries filter in the browser: each item's figure says its state, type, range band,
camera, score and object; the controls and the script (a file in the results folder, allowed by
the page's policy) work from file:// with no server; without JavaScript every item shows."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import chromium, needs_chromium
from helpers.results_folders import CAR, PERSON, SEGMENT, dets, key, labels, segment_folder, with_frames

from detect.cli import main
from detect.core.cameras import CameraName
from detect.report.filters import SCRIPT, range_band

VEHICLE, PEDESTRIAN = 1, 2
FIGURE = re.compile(r"<figure data-state='([^']*)' data-type='([^']*)' data-range='([^']*)' data-camera='([^']*)'"
                    r"(?: data-score='([^']*)')? data-object-id='([^']*)'>")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A segment whose pedestrian (one object, three frames) is never found, whose car on FRONT is
    missed, and whose model sees cars on empty road on FRONT and SIDE_LEFT."""
    walker, parked, found = (100, 100, 200, 400), (900, 300, 1100, 500), (1300, 300, 1500, 500)
    images = {}
    for i in range(3):
        images[key(i)] = (labels((walker, PEDESTRIAN), (parked, VEHICLE), (found, VEHICLE), ids=["walker", "parked", "car"]),
                          dets((found, 0.95, CAR), ((500, 800, 700, 900), 0.9 - 0.1 * i, CAR)))
    images[key(0, CameraName.SIDE_LEFT)] = (labels(((10, 10, 90, 90), VEHICLE), ids=["side"]),
                                            dets(((10, 10, 90, 90), 0.8, CAR), ((300, 300, 400, 350), 0.6, CAR),
                                                 ((600, 600, 650, 700), 0.7, PERSON)))
    run = tmp_path_factory.mktemp("filters")
    with_frames(segment_folder(run, images, threshold=0.5), list(images))
    assert main(["eval", str(run), "--quiet"]) == 0
    assert main(["report", str(run)]) == 0
    return run


@pytest.fixture(scope="module")
def page(run) -> Path:
    """The segment's page."""
    return run / SEGMENT / "report.html"


@pytest.mark.slow
def test_each_gallery_item_says_its_state_type_range_camera_score_and_object(page):
    html = page.read_text()
    figures = FIGURE.findall(html)
    states = sorted((state, kind, camera) for state, kind, _, camera, _, _ in figures)
    assert states == [("false-alarm", "PEDESTRIAN", "SIDE_LEFT"), ("false-alarm", "VEHICLE", "FRONT"),
                      ("false-alarm", "VEHICLE", "SIDE_LEFT"), ("missed", "PEDESTRIAN", "FRONT"),
                      ("missed", "VEHICLE", "FRONT")]  # the walker and the parked car once, not in three frames
    assert {f[2] for f in figures} == {"unknown"}  # no range in these tables
    ids = [f[5] for f in figures]
    assert len(set(ids)) == len(ids) and any(i.endswith("/walker") for i in ids)
    assert [f[4] for f in figures if f[0] == "false-alarm"] == ["0.700", "0.900", "0.600"]
    assert "<form class='filters' hidden><label>state <select name='state'><option value=''>all</option>" in html


def test_the_script_is_a_file_beside_the_pictures_and_the_policy_runs_only_files_of_the_folder(page):
    html = page.read_text()
    assert "<script src='./report/filters.js'></script>" in html and "<script>" not in html
    assert (page.parent / "report" / "filters.js").read_text() == SCRIPT
    policy = re.search(r'content="([^"]*)"', html).group(1)
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy


@pytest.mark.parametrize("metres, band", [(None, "unknown"), (math.nan, "unknown"), (-1.0, "unknown"), (0.0, "0-30 m"),
                                          (29.99, "0-30 m"), (30.0, "30-50 m"), (50.0, "50+ m"), (400.0, "50+ m")])
def test_a_box_range_falls_in_waymo_range_bands(metres, band):
    assert range_band(metres) == band


def test_the_run_page_worst_moments_have_the_same_filters_and_script(run):
    html = (run / "index.html").read_text()
    assert "<form class='filters' hidden>" in html and "<script src='./report/filters.js'></script>" in html
    assert (run / "report" / "filters.js").read_text() == SCRIPT
    ids = [f[5] for f in FIGURE.findall(html)]
    assert ids and len(set(ids)) == len(ids)


def shown(tab: Any) -> list[tuple[str, str]]:
    """The state and object of each gallery item the page shows."""
    return [tuple(item) for item in tab.eval_on_selector_all(
        "figure[data-state]", "els => els.filter(e => e.offsetParent !== null).map(e => [e.dataset.state, e.dataset.objectId])")]


@pytest.mark.slow  # starts Chromium
@needs_chromium
def test_on_the_run_page_choosing_missed_shows_only_missed_moments_each_object_once(run):
    with chromium() as browser:
        tab = browser.new_page()
        tab.goto((run / "index.html").as_uri())
        assert {state for state, _ in shown(tab)} == {"missed", "false-alarm"}
        tab.select_option("form.filters select[name=state]", "missed")
        missed = shown(tab)
        assert missed and {state for state, _ in missed} == {"missed"}
        assert len({object_id for _, object_id in missed}) == len(missed)


@pytest.mark.slow  # starts Chromium
@needs_chromium
def test_choosing_missed_shows_only_missed_items_each_object_once_and_without_javascript_all_show(page):
    with chromium() as browser:
        tab = browser.new_page()
        errors: list[str] = []
        tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        tab.goto(page.as_uri())
        assert tab.locator("form.filters").is_visible() and len(shown(tab)) == 5
        tab.select_option("form.filters select[name=state]", "missed")
        missed = shown(tab)
        assert [state for state, _ in missed] == ["missed", "missed"]
        assert len({object_id for _, object_id in missed}) == len(missed)
        assert tab.locator("form.filters output").inner_text() == "2 of 5 shown"
        tab.select_option("form.filters select[name=state]", "")
        tab.select_option("form.filters select[name=score]", "0.7")
        assert sorted(state for state, _ in shown(tab)) == ["false-alarm"] * 2
        assert errors == []
        plain = browser.new_context(java_script_enabled=False).new_page()
        plain.goto(page.as_uri())
        assert not plain.locator("form.filters").is_visible()
        assert plain.locator("figure[data-state]:visible").count() == 5
