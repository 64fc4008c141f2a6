"""`detect report`: static pages whose links all resolve, whose numbers are the run's, and that a
real browser renders (video plays, plots load)."""

from __future__ import annotations

import json
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.browser import chromium, needs_chromium, phone_page
from helpers.cli import without_status
from helpers.paths import REAL_SEGMENT, TINY_SEGMENT

from detect.cli import main
from detect.report.pages import index_page
from detect.results.results_folder import Manifest


class Page(HTMLParser):
    """Links, image and video sources, headings and table cells of a page."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.headings: list[str] = []
        self.subheadings: list[str] = []
        self.cells: list[str] = []
        self.tags: list[str] = []
        self._capture: str | None = None
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        values = dict(attrs)
        for name in ("href", "src"):
            if values.get(name):
                self.links.append(values[name])
        if tag in ("h2", "h3", "td", "th"):
            self._capture = tag
            self._text = ""

    def handle_data(self, data):
        if self._capture:
            self._text += data

    def handle_endtag(self, tag):
        if tag == self._capture:
            {"h2": self.headings, "h3": self.subheadings}.get(tag, self.cells).append(self._text.strip())
            self._capture = None


def assert_links_resolve(page_path: Path, page: Page) -> None:
    for link in page.links:
        if link.startswith("#") and link[1:]:  # the table of contents: a section of this page
            assert f"id='{link[1:]}'" in page_path.read_text(), link
            continue
        assert "://" not in link and not link.startswith("/"), link  # relative links only
        assert (page_path.parent / link).is_file(), link


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, real_frame_path, tiny_v2_path, stub_dynamic_dir) -> Path:
    folder = tmp_path_factory.mktemp("report_in")
    shutil.copy(real_frame_path, folder / "real.tfrecord")
    shutil.copytree(tiny_v2_path.parents[1], folder / "tiny")
    (folder / "broken.parquet").write_bytes(b"nope")
    out = tmp_path_factory.mktemp("report_out")
    assert main(["run", str(folder / "real.tfrecord"), str(folder / "tiny" / "camera_image"), str(folder / "broken.parquet"),
                 "--out", str(out), "--model", str(stub_dynamic_dir), "--mp4", "--quiet", "--report"]) == 1
    assert main(["eval", str(out / REAL_SEGMENT), "--quiet"]) == 0
    assert main(["report", str(out)]) == 0
    return out


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_a_segment_page_shows_its_run_and_every_link_resolves(run_dir):
    page_path = run_dir / REAL_SEGMENT / "report.html"
    page = Page(page_path)
    assert_links_resolve(page_path, page)
    # The verdict first, then the pictures, the errors, the boxes, the time, the details.
    assert page.headings == ["Pictures", "Against Waymo's labels", "Boxes", "Time", "Run details"]
    assert {"Scores", "Boxes drawn, per camera and class", "Versions"} <= set(page.subheadings)
    # One frame: every animation is a still, an image without player controls over it; each camera
    # is shown once, so the mosaic and the busiest frames (the same five images) are left out.
    assert "video" not in page.tags and "./mosaic.gif" not in page.links and "./FRONT.gif" in page.links
    assert "Frames with the most boxes" not in page.subheadings and "All cameras" not in page.subheadings
    assert (run_dir / REAL_SEGMENT / "mosaic.mp4").is_file()
    html = page_path.read_text()
    manifest = json.loads((run_dir / REAL_SEGMENT / "manifest.json").read_text())
    table = pq.read_table(run_dir / REAL_SEGMENT / "detections.parquet").to_pylist()
    drawn = [r for r in table if r["score"] >= 0.5]
    assert "./report/timeline.png" not in page.links
    shown = manifest["counts"]["drawn"]  # the renderer's count: what the errors drawing shows
    assert (f"<p>One frame, so nothing to plot over time: {shown} boxes drawn on its 5 images "
            "(per camera and class in the table below).</p>") in html
    assert (f"Drawn on the frames: the {shown} boxes scoring at least 0.5 (the drawing threshold). "
            f"detections.parquet also keeps {len(table) - shown} more boxes down to the score floor 0.05, "
            f"{len(table)} in all, so evaluation can try other thresholds.") in html
    width = 2 + len({r["label"] for r in drawn})  # camera, one column per class, all
    height = 2 + len({r["key.camera_name"] for r in drawn})  # header, one row per camera, all
    start = len(page.cells) - 1 - page.cells[::-1].index("camera")  # the last table with cameras: the counts
    counts = page.cells[start:start + width * height]
    assert counts[-width] == "all" and counts[-1] == str(len(drawn))  # the bottom-right total of the counts table
    assert f"{manifest['counts']['images_processed']} processed, 0 failed" in page.cells
    evaluation = json.loads((run_dir / REAL_SEGMENT / "eval.json").read_text())
    pedestrian = next(r for r in evaluation["levels"]["LEVEL_2"] if r["name"] == "PEDESTRIAN")
    assert f"{pedestrian['ap50']:.3f}" in page.cells


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_a_page_of_several_frames_plays_its_animations_and_plots_them(run_dir):
    page_path = run_dir / TINY_SEGMENT / "report.html"
    page = Page(page_path)
    assert_links_resolve(page_path, page)
    assert "./mosaic.mp4" in page.links and "./report/timeline.png" in page.links and "Over time" in page.subheadings
    html = page_path.read_text()
    assert html.count("<video ") == 6 and html.count(" controls autoplay loop muted playsinline ") == 6


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_the_index_has_a_row_per_segment_with_the_manifests_numbers(run_dir):
    page_path = run_dir / "index.html"
    page = Page(page_path)
    assert_links_resolve(page_path, page)
    assert f"./{REAL_SEGMENT}/report.html" in page.links and f"./{TINY_SEGMENT}/report.html" in page.links
    for segment in (REAL_SEGMENT, TINY_SEGMENT):
        manifest = json.loads((run_dir / segment / "manifest.json").read_text())
        row = page.cells[page.cells.index(segment):][:5]
        assert row == [segment, "complete", str(manifest["counts"]["images_processed"]),
                       str(manifest["counts"]["drawn"]), "0.5"]
    assert "Inputs that failed (1)" in page.headings
    assert "sortable" in page_path.read_text() and "<script>" in page_path.read_text()


@pytest.mark.slow
def test_sections_without_their_files_are_left_out(tiny_v2_path, stub_dynamic_dir, tmp_path):
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path), "--model", str(stub_dynamic_dir), "--quiet",
                 "--no-png", "--no-gif", "--no-eval"]) == 0
    page_path = tmp_path / TINY_SEGMENT / "report.html"
    page = Page(page_path)
    assert_links_resolve(page_path, page)
    assert not {"All cameras", "Each camera", "Frames with the most boxes"} & set(page.subheadings)
    assert not {"Pictures", "Against Waymo's labels"} & set(page.headings)
    assert "video" not in page.tags and "Scores" in page.subheadings
    assert main(["segment", str(tiny_v2_path), "--out", str(tmp_path / "gif"), "--model", str(stub_dynamic_dir),
                 "--quiet", "--report"]) == 0
    gif_page = Page(tmp_path / "gif" / TINY_SEGMENT / "report.html")
    assert "./mosaic.gif" in gif_page.links and "video" not in gif_page.tags  # no MP4: the GIF


@pytest.mark.slow
def test_an_index_of_a_thousand_segments_builds_in_seconds(tmp_path):
    manifests = []
    for n in range(1000):
        directory = tmp_path / f"{n:019d}_0000_000_0000_000"
        directory.mkdir()
        manifest = {"segment_context_name": directory.name, "status": "complete",
                    "counts": {"images_processed": 1000, "detections": 5000, "images_failed": 0,
                               "detections_by_label": {"car": 4000, "person": 1000}},
                    "timings": {"images_per_second": 10.0}}
        (directory / "manifest.json").write_text(json.dumps(manifest))
        manifests.append((directory, Manifest.from_json(manifest, directory)))
    started = time.perf_counter()
    page = index_page(tmp_path, manifests, [])
    seconds = time.perf_counter() - started
    assert Page(page).cells.count("complete") == 1000
    assert page.stat().st_size < 1_000_000 and seconds < 30  # a generous bound: the point is no per-frame work


def test_report_of_a_missing_directory_is_one_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert without_status(capsys.readouterr().err) == f"detect: error: {tmp_path / 'nope'}: no such results directory\n"


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
@needs_chromium
def test_a_real_browser_plays_the_video_and_loads_the_plots(run_dir):
    with chromium("--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-first-run") as browser:
        page = browser.new_page()
        page.goto((run_dir / TINY_SEGMENT / "report.html").as_uri())
        # Three frames: the mosaic's MP4 plays by itself (so its controls hide), looped and muted like the GIF.
        played = page.evaluate("""() => new Promise((resolve) => {
            const video = document.querySelector("video");
            const check = () => { if (!video.paused && video.currentTime > 0) resolve(video.duration); };
            video.addEventListener("timeupdate", check);
            video.addEventListener("error", () => resolve(-1));
            setTimeout(() => resolve(-2), 10000);
            check();
        })""")
        assert played > 0
        for html in (run_dir / TINY_SEGMENT / "report.html", run_dir / REAL_SEGMENT / "report.html"):
            page.goto(html.as_uri())
            sizes = page.evaluate("""async () => {
                const images = Array.from(document.images);
                images.forEach((img) => { img.loading = "eager"; });
                await Promise.all(images.map((img) => img.decode().catch(() => null)));
                return images.map((img) => [img.getAttribute("src"), img.naturalWidth]);
            }""")
            assert sizes and all(width > 0 for _, width in sizes), sizes
        # One frame: stills only, nothing with player controls over a picture.
        assert page.evaluate("document.querySelectorAll('video').length") == 0
        assert "./FRONT.gif" in [src for src, _ in sizes]  # each camera once; the mosaic would repeat them


def test_the_index_escapes_what_manifests_hold(tmp_path):
    directory = tmp_path / "seg"
    directory.mkdir()
    manifest = {"segment_context_name": "<b>seg</b>", "status": "<i>x</i>",
                "counts": {"images_processed": "<img src=x onerror=alert(1)>", "detections_by_label": {"<s>car</s>": 1}}}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    html = index_page(tmp_path, [(directory, Manifest.from_json(manifest, directory))], []).read_text()
    assert "<img src=x" not in html and "<b>seg</b>" not in html and "<s>car</s>" not in html and "<i>x</i>" not in html
    assert "<td>-</td>" in html  # a count that is not a number is not shown at all


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
@needs_chromium
def test_the_pages_fit_a_phone_without_sideways_scrolling(run_dir):
    with phone_page() as (page, errors):
        for html in (run_dir / REAL_SEGMENT / "report.html", run_dir / TINY_SEGMENT / "report.html", run_dir / "index.html"):
            page.goto(html.as_uri())
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, html
        assert errors == []
    # The run evaluated itself: the errors' sections were among what had to fit.
    real = (run_dir / REAL_SEGMENT / "report.html").read_text()
    assert "Hits, false alarms, misses" in real and "largest missed labels" in real and "Which threshold" in real


class Pictures(HTMLParser):
    """Every <img> and <video> source with the link it sits in (None when it is in none)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.pictures: list[tuple[str, str | None]] = []
        self._link: str | None = None
        self.feed(path.read_text())

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "a":
            self._link = values.get("href")
        elif tag in ("img", "video") and values.get("src"):
            self.pictures.append((values["src"], self._link))

    def handle_endtag(self, tag):
        if tag == "a":
            self._link = None


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_every_picture_is_shown_once_and_opens_a_full_size_file(run_dir):
    for page_path in (run_dir / REAL_SEGMENT / "report.html", run_dir / "index.html"):
        found = Pictures(page_path).pictures
        sources = [src for src, _ in found]
        assert len(sources) == len(set(sources)), page_path  # no picture twice on a page
        for src, link in found:
            assert link is not None and (page_path.parent / link).is_file(), (page_path, src, link)
    # One frame: a camera's still opens its full-size frame, not the downscaled GIF.
    found = dict(Pictures(run_dir / REAL_SEGMENT / "report.html").pictures)
    assert found["./FRONT.gif"].startswith("./frames/FRONT/")


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
def test_the_headline_comes_first_and_the_counts_agree_between_pages(run_dir):
    segment_path = run_dir / REAL_SEGMENT / "report.html"
    html = segment_path.read_text()
    evaluation = json.loads((run_dir / REAL_SEGMENT / "eval.json").read_text())
    manifest = json.loads((run_dir / REAL_SEGMENT / "manifest.json").read_text())
    table = pq.read_table(run_dir / REAL_SEGMENT / "detections.parquet").to_pylist()
    drawn = manifest["counts"]["drawn"]  # what the frames show (errors drawn: judged types and other classes)
    assert 0 < drawn <= sum(r["score"] >= 0.5 for r in table)
    # The verdict sits before the table of contents, which comes before every section.
    assert html.index("class='headline'") < html.index("class='toc'") < html.index("<h2 ")
    headline = html[html.index("class='headline'"):html.index("class='toc'")]
    for row in evaluation["levels"]["LEVEL_2"]:
        if row["name"] != "ALL" and row["labels"]:
            assert f"<td>{row['name']}</td>" in headline and f"{row['ap50']:.3f}" in headline
        elif row["name"] != "ALL":
            assert f"No labels of {row['name']}" in headline and f"<td>{row['name']}</td>" not in headline
    assert f"{drawn} boxes drawn (score at least 0.5)" in headline
    # The index counts the same boxes, at the same threshold, and its segments table comes first.
    index = (run_dir / "index.html").read_text()
    assert index.index("<h2 id='segments'>") < min(i for i in (index.find("<img"), len(index)) if i >= 0)
    page = Page(run_dir / "index.html")
    row = page.cells[page.cells.index(REAL_SEGMENT):][:5]
    assert row[3] == str(drawn) and row[4] == "0.5"


@pytest.mark.slow  # a full pipeline (`make test-fast` leaves it out)
@needs_chromium
def test_at_1280_px_the_verdict_and_the_segments_are_in_the_first_900_px(run_dir):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto((run_dir / REAL_SEGMENT / "report.html").as_uri())
        # The bottom of the verdict table (every type's AP50) and of the segments table, in page pixels.
        bottom = "(selector) => document.querySelector(selector).getBoundingClientRect().bottom + window.scrollY"
        assert page.locator("table.verdict td").count() >= 7  # at least one type with labels
        assert page.evaluate(bottom, "table.verdict") <= 900
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        page.goto((run_dir / "index.html").as_uri())
        assert page.evaluate(bottom, "#segments + p + table") <= 900
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        # The segments table is not wider than the page: AP50 is on screen without scrolling it.
        assert page.evaluate("(() => { const t = document.querySelector('#segments + p + table'); "
                             "return t.scrollWidth <= t.clientWidth; })()")
