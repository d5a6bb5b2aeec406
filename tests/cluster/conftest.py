"""Fixtures of the cluster views' own tests (reader, statuses, shortfalls).

``reader``: a :class:`~rte.cluster.reader.ClusterReader` on the apiserver double, through the
real ``kubernetes`` client. The demo cluster's builders are in :mod:`rte.testing.views_cluster`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rte.cluster.reader import ClusterReader
from rte.testing.apiserver import FakeApiServer


@pytest.fixture
def reader(fake_apiserver: FakeApiServer) -> Iterator[ClusterReader]:
    r = ClusterReader(fake_apiserver.api_client())
    try:
        yield r
    finally:
        r.close()
