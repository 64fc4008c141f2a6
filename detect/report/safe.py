"""Values from results files on their way into HTML: escaped, type-checked, links relative only.

A results folder is shared, zipped and opened in browsers, so every value read from it (a
manifest, eval.json, run.json, a folder name) is untrusted: a page shows it as text, a number
is shown only when it is a finite number, a link is always a relative path (`./` + URL-quoted),
and a Content-Security-Policy lets nothing run but the page's own script (by its hash).
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import quote

MAX_SAFE_INTEGER = 2**53  # what JSON readers (and JavaScript) hold exactly


def text(value: Any) -> str:
    """Any value as escaped text (quotes too: safe inside an attribute)."""
    return escape(str(value), quote=True)


def number(value: Any, digits: int = 1) -> str:
    """A finite int or float with `digits` decimals; anything else (a string, 10**400, NaN) is "-"."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    try:
        as_float = float(value)
    except OverflowError:
        return "-"
    return f"{as_float:.{digits}f}" if math.isfinite(as_float) else "-"


def count(value: Any) -> int | None:
    """A count as an int, or None unless it is a whole number from 0 to 2**53."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SAFE_INTEGER:
        return None
    return value


def count_text(value: Any) -> str:
    checked = count(value)
    return "-" if checked is None else str(checked)


def mapping(value: Any) -> Mapping[str, object]:
    """`value` when it is a JSON object, else an empty one (a hand-edited file may hold anything)."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def href(relative: str) -> str:
    """A link to a file inside the results folder: `./` + the URL-quoted path, never a scheme
    (`javascript:...` as a folder name stays a folder), escaped for an attribute."""
    return text("./" + quote(relative.lstrip("/"), safe="/"))


def content_security_policy(script: str, style: str, script_files: bool = False) -> str:
    """The page's `<meta>` policy: its own inline style and script (by hash), with `script_files`
    its scripts in the results folder (`'self'`), files beside it, nothing else."""
    allowed = [*([f"'{_hash(script)}'"] if script else []), *(["'self'"] if script_files else [])]
    scripts = " ".join(allowed) or "'none'"
    return ("default-src 'none'; img-src 'self' file: data:; media-src 'self' file:; "
            f"style-src '{_hash(style)}'; script-src {scripts}; base-uri 'none'; form-action 'none'")


def _hash(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
