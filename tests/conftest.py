"""What every test package shares.

- The apiserver double's fixtures (``fake_apiserver``, ``kube_api_client``, ``fake_kubeconfig``)
  from :mod:`rte.testing.apiserver.pytest_plugin`, and ``objects``: the custom objects API
  (NRTs) of that double through the real ``kubernetes`` client.
- ``kubelet``: the fake kubelet (real gRPC on a unix socket) serving the R640 scenario.
- ``clock``: the one fake clock, :class:`tests.helpers.clock.FakeClock`.

Fixture files and the common node (the R640 sysfs tree, podresources scenario and kubelet
config) are named in :mod:`tests.helpers.paths`, importable because tests parametrize over them.
Each package folder's ``conftest.py`` holds that package's own shared fixtures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.clock import FakeClock
from tests.helpers.paths import R640_STATIC

pytest_plugins = ["rte.testing.apiserver.pytest_plugin"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def kubelet() -> Iterator[FakeKubelet]:
    with FakeKubelet(scenario=R640_STATIC) as fake:
        yield fake


@pytest.fixture
def objects(kube_api_client: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(kube_api_client)
