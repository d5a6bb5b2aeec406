"""Fixtures shared by the extender's tests (HTTP wire format, and the app against the apiserver double).

Wire-JSON builders and the HTTP client are in tests.helpers.extender; the apiserver double and
``objects`` come from tests/conftest.py. ``http`` talks to the ``app`` fixture of the test module
that asks for it (each module makes the app its tests need).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rte.extender.app import ExtenderApp
from tests.helpers.extender import Client
from tests.helpers.waiting import wait_for


@pytest.fixture
def http(app: ExtenderApp) -> Iterator[Client]:
    """A client of the module's ``app``, once it is ready."""
    assert app.server is not None
    c = Client(app.server.url)
    wait_for(lambda: c.get("/readyz")[0] == 200)
    yield c
    c.close()
