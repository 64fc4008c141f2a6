"""The package's shape: layers one way (import-linter, run by `make test`), no cycles, and no
TensorFlow or Ray at import time."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import grimp
import pytest

import detect


def all_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages(detect.__path__, "detect."))


@pytest.mark.slow
def test_importing_every_module_loads_neither_tensorflow_nor_ray():
    modules = [m for m in all_modules() if not m.startswith("detect.tools") and not m.endswith(".__main__")]
    code = ("import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "print(sorted(m for m in ('tensorflow', 'ray', 'matplotlib.pyplot', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # scipy (~0.5 s) loads with the first track assignment


@pytest.mark.slow
def test_the_commands_start_without_the_evaluation_and_report_libraries():
    # matplotlib and pandas (~0.7 s) load when the evaluation or the report begins: `detect redraw`
    # imports them in the thread that evaluates while its frames are drawn
    code = ("import sys, detect.cli.app, detect.cli.redraw_command, detect.cli.segment_and_run\n"
            "print(sorted(m for m in ('matplotlib', 'pandas', 'scipy', 'tensorflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_imports_itself_back_through_others():
    graph = grimp.build_graph("detect")
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.append((module, *back))
    assert cycles == []


def test_the_layers_are_the_folders():
    layers = {m.split(".")[1] for m in all_modules() if m.count(".") >= 1}
    assert {"core", "waymo", "model", "render", "track", "results", "engine", "evaluate", "report", "compare", "cli",
            "tools", "judge"} == layers
