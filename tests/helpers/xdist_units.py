"""pytest-xdist's `loadscope` with other scopes: the files named are one unit each (their module and
session fixtures are built once, on one worker); every other test is a unit of its own."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from xdist.scheduler import LoadScopeScheduling

# How pytest-xdist hands out the tests (`--dist loadscope --no-loadscope-reorder`, Makefile; these
# scopes through tests/conftest.py): a file that defines a module or session fixture (a Ray cluster, a
# run many of its tests read) goes to one worker whole, so that fixture is built once; every other
# test is a unit of its own, so the two workers end together instead of one finishing a long file
# alone. Units start in conftest's order: LONG_FILES first, so no long file starts last.
ONE_UNIT_FILES = frozenset({
    "test_coco_model.py", "test_compare.py", "test_context_tables.py", "test_detector.py", "test_errors.py",
    "test_fuzz.py", "test_gallery_filters.py", "test_hardening_pages.py", "test_hardening_redraw.py",
    "test_input_sizes.py", "test_nanodet.py", "test_onnx_exports.py", "test_openvino_cache.py", "test_output_pins.py",
    "test_ray_engine.py", "test_real_model.py", "test_redraw.py", "test_report.py", "test_runtimes.py",
    "test_signals.py", "test_slice_intervals.py", "test_slices.py", "test_ssdlite.py", "test_tiles.py", "test_track_baseline.py",
    "test_tracking.py", "test_tracking_runs.py",
})
# Tests of a whole file that use none of its module fixtures and take long: a unit of their own, so
# they run beside the rest of their file. The Ray run that is signalled starts its own cluster in a
# process of its own, beside the file's in-process one (which it does not use).
OWN_UNIT_TESTS = frozenset({
    "tests/test_ray_engine.py::test_sigterm_stops_a_ray_run_with_one_line_and_resume_finishes_it",
})
LONG_FILES = ("test_ray_engine.py", "test_signals.py", "test_runtimes.py", "test_real_model.py", "test_coco_model.py",
              "test_eval.py")


class UnitScheduling(LoadScopeScheduling):
    def __init__(self, config: pytest.Config, log, whole_files: Collection[str]) -> None:
        super().__init__(config, log)
        self.whole_files = frozenset(whole_files)

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return path if path.rsplit("/", 1)[-1] in self.whole_files and nodeid not in OWN_UNIT_TESTS else nodeid
