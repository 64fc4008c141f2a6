"""The suite's own layout: test modules stand alone (helpers live in tests/helpers/, fixtures in
conftest), and a file whose tests share a module or session fixture goes to one pytest-xdist worker
whole."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.xdist_units import ONE_UNIT_FILES, OWN_UNIT_TESTS

TESTS = Path(__file__).parent
MODULES = sorted(TESTS.glob("test_*.py"))


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_no_test_module_imports_another_or_conftest():
    test_modules = {path.stem for path in MODULES} | {"conftest"}
    assert {path.name: sorted(imported_modules(path) & test_modules) for path in MODULES
            if imported_modules(path) & test_modules} == {}


def test_the_helpers_import_no_test_module():
    imports = {path.name: imported_modules(path) for path in sorted((TESTS / "helpers").glob("*.py"))}
    assert {name: sorted(i for i in found if i.startswith("test_") or i == "conftest")
            for name, found in imports.items() if any(i.startswith("test_") or i == "conftest" for i in found)} == {}


def test_the_files_with_a_module_or_session_fixture_are_the_ones_handed_out_whole():
    """A file that defines a module- or session-scoped fixture, split across the workers, would build
    that fixture on each."""
    shared = re.compile(r"""@pytest\.fixture\([^)]*scope=["'](module|package|class|session)["']""")
    assert {path.name for path in MODULES if shared.search(path.read_text())} == ONE_UNIT_FILES


def test_the_tests_taken_out_of_their_files_unit_exist_and_use_no_module_fixture_of_it():
    for nodeid in OWN_UNIT_TESTS:
        path, name = nodeid.split("::")
        tree = ast.parse((TESTS.parent / path).read_text())
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        module_fixtures = {node.name for node in functions.values()
                           if any("module" in ast.unparse(d) for d in node.decorator_list)}
        assert name in functions and Path(path).name in ONE_UNIT_FILES, nodeid
        assert not {a.arg for a in functions[name].args.args} & module_fixtures, nodeid


# What starts `detect` as a process of its own (each pays a TensorFlow import: seconds of CPU).
DETECT_PROCESS = re.compile(r"""["']detect\.cli["']|(?<![.\w])(start|peak_rss)\(""")
LEFT_OUT_OF_FAST = re.compile(r"mark\.(slow|ray|signals)\b")


def detect_starting_tests(tree: ast.Module) -> list[ast.FunctionDef]:
    """The module's test functions that start `detect` as a process, directly or through one of the
    module's own functions."""
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    launchers = {node.name for node in functions if DETECT_PROCESS.search(ast.unparse(node))}
    names = "|".join(sorted(launchers))
    calls = re.compile(rf"\b({names})\(") if launchers else None
    return [node for node in functions if node.name.startswith("test_")
            and (DETECT_PROCESS.search(ast.unparse(node)) or (calls and calls.search(ast.unparse(node))))]


def test_a_test_that_starts_detect_as_a_process_is_left_out_of_the_fast_tier():
    """`make test-fast` is the tier run between edits: a test that starts `detect` as a process is
    `slow` (or `ray` / `signals`), by itself or by its module's `pytestmark` (tests/conftest.py's rule)."""
    unmarked = []
    for path in MODULES:
        tree = ast.parse(path.read_text(), str(path))
        module_mark = any(isinstance(node, ast.Assign) and "pytestmark" in ast.unparse(node.targets[0])
                          and LEFT_OUT_OF_FAST.search(ast.unparse(node.value)) for node in tree.body)
        unmarked += [f"{path.name}::{node.name}" for node in detect_starting_tests(tree) if not module_mark
                     and not any(LEFT_OUT_OF_FAST.search(ast.unparse(d)) for d in node.decorator_list)]
    assert unmarked == []


def test_the_fast_tier_rule_sees_a_process_started_through_a_helper_of_the_module():
    module = "detect" + ".cli"  # not written whole: this module would start `detect` by the rule
    tree = ast.parse(f"def cli(*a):\n    return [sys.executable, '-m', '{module}', *a]\n\n"
                     "def test_x():\n    run(cli('eval'))\n\ndef test_y():\n    assert main(['eval']) == 0\n")
    assert [node.name for node in detect_starting_tests(tree)] == ["test_x"]
