"""pytest-xdist's `loadscope` with other scopes: the files named share one unit (their module fixtures
are built once, on one worker); every other test is a unit of its own."""

from __future__ import annotations

from collections.abc import Collection

import pytest
from xdist.scheduler import LoadScopeScheduling


class UnitScheduling(LoadScopeScheduling):
    def __init__(self, config: pytest.Config, log, whole_files: Collection[str]) -> None:
        super().__init__(config, log)
        self.whole_files = frozenset(whole_files)

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return path if path.rsplit("/", 1)[-1] in self.whole_files else nodeid
