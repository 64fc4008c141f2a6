"""detect.core.files: the one way a file we did not write is read back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from detect.core.files import UnreadableFileError, parse_json, read_json, read_json_object, read_regular


def test_a_regular_json_object_is_read(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"a": [1, 2.5, "x"], "b": null}')
    assert read_json_object(path) == {"a": [1, 2.5, "x"], "b": None}


@pytest.mark.parametrize(("text", "why"), [
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": Infinity}', "Infinity is not a JSON number"),
    ('{"a": -Infinity}', "-Infinity is not a JSON number"),
    ('{"a": 1e999}', "1e999 does not fit a float"),
])
def test_non_finite_numbers_are_refused(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(UnreadableFileError, match=f"^{path} is not valid JSON \\({why}\\)$"):
        read_json(path)


def test_deep_nesting_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(UnreadableFileError, match=f"^{path} is nested too deeply to be read$"):
        read_json(path)


def test_broken_json_and_wrong_kind_say_what(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"a": ')
    with pytest.raises(UnreadableFileError, match=r"is not valid JSON \(Expecting value, line 1 column 7\)$"):
        read_json(path)
    path.write_text("[1]")
    with pytest.raises(UnreadableFileError, match=f"^{path} holds a JSON list, not an object$"):
        read_json_object(path)
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(UnreadableFileError, match=f"^{path} is not UTF-8 text$"):
        read_json(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    with pytest.raises(UnreadableFileError, match=f"^{fifo} is a FIFO; only regular files are read here$"):
        read_json(fifo)


def test_a_folder_and_a_device_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match=f"^{tmp_path} is a folder; only regular files are read here$"):
        read_regular(tmp_path, limit=10)
    with pytest.raises(UnreadableFileError, match="^/dev/zero is not a regular file; only regular files are read here$"):
        read_regular(Path("/dev/zero"), limit=10)


def test_links_are_followed_only_when_allowed(tmp_path: Path) -> None:
    target = tmp_path / "outside.json"
    target.write_text("{}")
    link = tmp_path / "inside.json"
    link.symlink_to(target)
    assert read_json_object(link) == {}
    with pytest.raises(UnreadableFileError, match=f"^{link} is a symbolic link; only regular files are read here$"):
        read_json_object(link, follow_links=False)


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(UnreadableFileError, match=f"^{path} is 203 bytes, more than the 100 expected of it$"):
        read_json(path, limit=100)


def test_a_missing_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match=f"^{tmp_path / 'no.json'} cannot be read: No such file or directory$"):
        read_json(tmp_path / "no.json")


def test_parse_json_names_its_source() -> None:
    with pytest.raises(UnreadableFileError, match="^--json value is not valid JSON"):
        parse_json("{", "--json value")
