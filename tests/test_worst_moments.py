"""The worst moments of a run on index.html: camera images ranked by the errors their frames show,
across segments, each shown by an object no other item shows, linked to its frame and page."""

from __future__ import annotations

import re

from helpers.results_folders import CAR, PEDESTRIAN, PERSON, VEHICLE, dets, key, labels, segment_folder, with_frames

from detect.cli import main

CAR_BOX, PERSON_BOX = (100.0, 100.0, 500.0, 400.0), (900.0, 300.0, 960.0, 460.0)
GHOST = (1300.0, 600.0, 1500.0, 700.0)  # a false alarm on empty road
FIGURE = re.compile(r"<figure (data-state='[^']*'[^>]*)>(.*?)</figure>", re.S)


def run_folder(tmp_path):
    """Segment `parked`: the same car (label car0) missed in three frames, with the same tracked false
    alarm (track 7) beside it: two errors each. Segment `crowd`: one image with three missed labels."""
    run = tmp_path / "run"
    parked = {key(i, segment="parked"): (labels((CAR_BOX, VEHICLE), ids=["car0"]), dets((GHOST, 0.8, CAR)))
              for i in range(3)}
    segment_folder(run, parked, knows=[PERSON, CAR], name="parked", track_ids=[7, 7, 7])
    crowd = {key(0, segment="crowd"): (labels((CAR_BOX, VEHICLE), (PERSON_BOX, PEDESTRIAN), ((600.0, 100.0, 700.0, 300.0),
                                                                                            PEDESTRIAN)), dets())}
    segment_folder(run, crowd, knows=[PERSON, CAR], name="crowd")
    with_frames(run / "parked", list(parked))
    with_frames(run / "crowd", list(crowd))
    assert main(["eval", str(run), "--quiet"]) == 0
    assert main(["report", str(run)]) == 0
    return run


def moments(run):
    page = (run / "index.html").read_text()
    start = page.index("id='worst-moments'")
    return page, FIGURE.findall(page[start:page.index("</div>", start) + 6])


def test_the_worst_image_comes_first_and_no_object_is_shown_twice(tmp_path):
    """Three errors beat two; the parked car and its tracked false alarm each show once (the third
    frame of the pair has nothing new to show, so it is left out)."""
    run = run_folder(tmp_path)
    page, figures = moments(run)
    assert "Where it fails" in page
    assert len(figures) == 3
    states = [re.search(r"data-state='([^']*)'", attributes).group(1) for attributes, _ in figures]
    objects = [re.search(r"data-object-id='([^']*)'", attributes).group(1) for attributes, _ in figures]
    assert states == ["missed", "missed", "false-alarm"]
    assert len(set(objects)) == 3
    assert "#1: 3 errors (3 missed, 0 false alarms, of 3 labels)" in figures[0][1]
    assert "missed VEHICLE 400x300 px" in figures[0][1]  # the largest of the three
    assert "crowd" in figures[0][1] and "parked" in figures[1][1] and "FA car 0.80" in figures[2][1]


def test_each_moment_links_its_drawn_frame_and_its_segment_page(tmp_path):
    """The close-up opens the frame it was cut from; the caption names the segment and links its page."""
    run = run_folder(tmp_path)
    _, figures = moments(run)
    for _, body in figures:
        frame = re.search(r"<a href='([^']*)'><img", body).group(1)
        crop = re.search(r"<img[^>]* src='([^']*)'", body).group(1)
        page = re.search(r"<br><a href='([^']*)'>", body).group(1)
        assert (run / frame).is_file() and "/frames/FRONT/" in frame
        assert (run / crop).is_file() and crop.startswith("./report/")
        assert (run / page).is_file() and page.endswith("/report.html")


def test_a_run_without_an_images_table_has_no_worst_moments(tmp_path):
    """A run evaluated before the table existed: the index has no such section, and no error."""
    run = run_folder(tmp_path)
    (run / "images.parquet").unlink()
    assert main(["report", str(run)]) == 0
    assert "worst-moments" not in (run / "index.html").read_text()


def test_a_broken_images_table_is_a_note_on_the_page(tmp_path):
    """Not a Parquet file: one line on the page naming it; the rest of the index stands."""
    run = run_folder(tmp_path)
    (run / "images.parquet").write_bytes(b"not parquet")
    assert main(["report", str(run)]) == 0
    page = (run / "index.html").read_text()
    assert "images.parquet: not a readable images table" in page
    assert "the worst moments are left out of the page" in page


def test_where_it_fails_holds_the_error_kinds_then_the_worst_moments_and_the_pooled_section_does_not_repeat_them(
        tmp_path):
    """index.html's "Where it fails": the pooled slices and error kinds (why), then the worst moments
    (where to look); the pooled evaluation below keeps its counts and AP without showing them again."""
    page = (run_folder(tmp_path) / "index.html").read_text()
    where = page.index("<h2 id='where-it-fails'>")
    pooled = page.index("<h2 id='evaluation'>")
    assert where < page.index("Where the AP goes: kinds of error") < page.index("id='worst-moments'") < pooled
    assert page.count("Where the AP goes: kinds of error") == 1 and page.count("<h3>Confusion</h3>") == 1
