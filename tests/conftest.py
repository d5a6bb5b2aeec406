"""What every test package shares.

- The apiserver double's fixtures (``fake_apiserver``, ``kube_api_client``, ``fake_kubeconfig``)
  from :mod:`rte.testing.apiserver.pytest_plugin`, and ``objects``: the custom objects API
  (NRTs) of that double through the real ``kubernetes`` client.
- ``kubelet``: the fake kubelet (real gRPC on a unix socket) serving the R640 scenario.
- ``clock``: the one fake clock, :class:`tests.helpers.clock.FakeClock`.
- rte's bytecode, compiled once at the start of a run (``pytest_sessionstart``) for the many
  subprocesses the tests start (``python -m rte ...``): see there.
- The Hypothesis profiles of the parsers' fuzz tests (``tests/*/test_*_fuzz.py``): ``ci`` (the
  default) runs a fixed, derandomized budget so every run tries the same inputs and the whole
  fuzz suite stays well under a minute; ``dev`` runs many more random examples and remembers
  failures in ``.hypothesis/``. Choose with ``RTE_HYPOTHESIS_PROFILE=dev`` or
  ``--hypothesis-profile dev``. A failure prints the smallest input that broke the property.

Fixture files and the common node (the R640 sysfs tree, podresources scenario and kubelet
config) are named in :mod:`tests.helpers.paths`, importable because tests parametrize over them.
Each package folder's ``conftest.py`` holds that package's own shared fixtures.
"""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.clock import FakeClock
from tests.helpers.paths import R640_STATIC, REPO

pytest_plugins = ["rte.testing.apiserver.pytest_plugin"]

# Examples are cheap (a parser call) except where a test writes files; deadlines would only
# flake on a loaded CI machine, so none. A too_slow health check would flake the same way.
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("RTE_HYPOTHESIS_PROFILE", "ci"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile rte's bytecode into the checkout's ``__pycache__`` once, before any test runs.

    Many tests start ``python -m rte ...`` or a script importing rte in a subprocess (the
    end-to-end tests, the command blocks of the docs, the import-boundary checks). Where
    PYTHONDONTWRITEBYTECODE is set, as on the project's machines, none of them can leave its
    bytecode behind, so each one compiled every rte module it imported again: about 0.3 s of CPU
    for an agent or extender process. Python still reads a cache it finds, so one compilation
    here serves them all: no import changes its result, only its cost. Only the controller
    (or the single process of a serial run) compiles: pytest-xdist starts its workers after this
    hook, and files already up to date are skipped.
    """
    if not hasattr(session.config, "workerinput"):
        compileall.compile_dir(REPO / "rte", quiet=2)


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
