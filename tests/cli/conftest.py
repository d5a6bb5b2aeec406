"""Fixtures shared by the command-line tests (rte dump, fit, extender, top, explain).

Fixture paths are in tests.helpers.paths. ``demo_api`` is the apiserver double holding the small
demo cluster of :mod:`rte.testing.views_cluster` with every age relative to ``DEMO_NOW`` (for
exact tables, read with a clock stopped there); ``live_kubeconfig`` holds the same cluster aged
relative to the real time, for commands run as a user runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rte.cluster.reader import ClusterReader
from rte.testing.apiserver import FakeApiServer
from rte.testing.views_cluster import demo

DEMO_NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def demo_api(fake_apiserver: FakeApiServer) -> FakeApiServer:
    demo(fake_apiserver, DEMO_NOW)
    return fake_apiserver


@pytest.fixture
def open_demo(demo_api: FakeApiServer) -> Iterator[Callable[[str | None], ClusterReader]]:
    """``open_reader`` for :func:`rte.commands.top.top`: readers on the demo cluster."""
    opened: list[ClusterReader] = []

    def open_reader(list_resource_version: str | None = None) -> ClusterReader:
        reader = ClusterReader(demo_api.api_client(), list_resource_version=list_resource_version)
        opened.append(reader)
        return reader

    yield open_reader
    for reader in opened:
        reader.close()


@pytest.fixture
def live_kubeconfig(fake_apiserver: FakeApiServer, fake_kubeconfig: Path) -> Path:
    demo(fake_apiserver)
    return fake_kubeconfig
