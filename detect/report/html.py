"""The small HTML building blocks the pages share: every value escaped (`detect.report.safe`)
unless it is `Markup` this package built itself from escaped parts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from detect.core.atomic import atomic_write_bytes
from detect.report import safe
from detect.sinks.layout import real_file


class Markup(str):
    """HTML this package built itself from escaped parts; every other cell value is escaped."""


def table(headers: Iterable[str], rows: Iterable[Sequence[Any]], css: str = "") -> str:
    head = "".join(f"<th>{safe.text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table class='{css}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cell(value: Any) -> str:
    if isinstance(value, Markup):
        return f"<td>{value}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and safe.number(value) != "-":
        return f"<td data-value='{safe.text(value)}'>{safe.text(value)}</td>"
    return f"<td>{safe.text(value)}</td>"


def img(path: str, alt: str) -> str:
    return f"<img src='{safe.href(path)}' alt='{safe.text(alt)}'>"


def num(value: Any, digits: int = 1) -> str:
    return safe.number(value, digits)


def count_cell(value: Any) -> Any:
    """A count from a results file: the number when it is one, else "-" (escaped as text)."""
    checked = safe.count(value)
    return "-" if checked is None else checked


def write_page(path: Path, title: str, sections: list[str], style: str, script: str = "",
               script_files: Sequence[str] = ()) -> Path:
    """A whole static page, written atomically (never through a symlink): its own style and script
    only, allowed by hash in its Content-Security-Policy, and `script_files` (paths relative to the
    page, in the results folder: `script-src 'self'`)."""
    policy = safe.content_security_policy(script, style, bool(script_files))
    files = "".join(f"<script src='{safe.href(name)}'></script>" for name in script_files)
    page = (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\"><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{safe.text(title)}</title><style>{style}</style></head>"
            f"<body>{''.join(sections)}{f'<script>{script}</script>' if script else ''}{files}</body></html>\n")
    return atomic_write_bytes(real_file(path), page.encode())
