"""Fixtures of the end-to-end tests: the apiserver double with the node registered, and agent processes.

The fake kubelet (``kubelet``) comes from ``tests/conftest.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.e2e import KUBELET_CONFIG, NODE, SYSFS, AgentFactory, AgentProcess


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        server.register_node(NODE)
        yield server


@pytest.fixture
def start_agent(
    tmp_path: Path, api: FakeApiServer, kubelet: FakeKubelet, request: pytest.FixtureRequest
) -> Iterator[AgentFactory]:
    """``start_agent(--flag=value, ...)`` starts the agent with short e2e intervals plus overrides."""
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    kubelet_root = tmp_path / "kubelet"
    (kubelet_root / "device-plugins").mkdir(parents=True)
    started: list[AgentProcess] = []

    def start(*extra: str) -> AgentProcess:
        flags = {
            "--node-name": NODE,
            "--kubeconfig": str(kubeconfig),
            "--podresources": kubelet.endpoint,
            "--sysfs": str(SYSFS),
            "--kubelet-config": str(KUBELET_CONFIG),
            "--kubelet-root": str(kubelet_root),
            "--notify-file": str(tmp_path / "run" / "notify"),
            "--http-address": "127.0.0.1:0",
            "--poll-interval": "200ms",
            "--debounce": "50ms",
            "--max-delay": "300ms",
            "--resync-interval": "1s",
            "--retry-base": "100ms",
            "--retry-cap": "1s",
            "--lease-duration": "4s",
            "--request-timeout": "1s",
            "--kubelet-timeout": "1s",
            "--shutdown-timeout": "2s",
        }
        argv = [sys.executable, "-m", "rte", "run"]
        for flag, value in flags.items():
            argv += [flag, value]
        argv += list(extra)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RTE_")}
        proc = AgentProcess(argv, tmp_path / f"agent-{len(started)}.log", env)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        code = proc.stop()
        if code != 0 or getattr(request.node, "rep_call_failed", False):
            sys.stderr.write(f"--- agent log {proc.log_path} ---\n{proc.log}\n")
        assert code == 0, f"agent exited with {code}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.rep_call_failed = True  # type: ignore[attr-defined]
