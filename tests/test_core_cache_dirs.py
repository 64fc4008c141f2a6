"""The one rule for where `detect` keeps what it may rebuild (the CLI, the runtime cache and the npm
fetcher all read `user_cache_dir`)."""

from __future__ import annotations

from pathlib import Path

from detect.core.cache_dirs import user_cache_dir


def test_the_cache_is_xdg_cache_home_detect_else_home_cache_detect(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "detect"
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty counts as unset
    assert user_cache_dir() == Path(tmp_path / "home" / ".cache" / "detect")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "detect"
