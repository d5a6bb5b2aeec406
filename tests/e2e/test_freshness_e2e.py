"""Freshness without heartbeat writes, under the four faults a consumer must notice.

The agent runs with no Lease (``--lease-duration 0``, the default); the kubelet's prober and the
node lifecycle controller are doubles (tests/helpers/kubelet_status.py) that turn its ``/readyz``
into the agent pod's ``Ready`` condition exactly as Kubernetes does: written on change only. The
real ``rte extender`` reads that condition off its pod watch (``--heartbeat-source agent-pods``,
the default) and stops trusting the node's NRT once its agent stopped vouching for longer than
``--stale-after``.

Each test measures fault -> "the extender refuses the node" and checks it against the bound the
parameters give (docs/freshness.md computes the same bound for the deployed parameters):

* agent killed: the kubelet sees the exit at its next relist (one probe period here), then max age;
* agent hung: ``failure_threshold`` probes of ``period`` (each up to ``timeout``), then max age;
* node gone: the node lifecycle controller's grace plus one monitor period, then max age;
* apiserver cut off from the agent only: the agent's own ``api_window`` (ready factor x resync
  interval) until ``/readyz`` fails, then the hung-agent path.

The slack added to every bound is for a loaded 2-core CI machine; the measured figures are printed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rte.testing.apiserver import FakeApiServer
from tests.helpers.e2e import NODE, AgentFactory, AgentProcess, stored
from tests.helpers.extender import GI, PROFILE, Client, pod
from tests.helpers.kubelet_status import NodeLifecycle, PodStatusWriter, ReadinessProber
from tests.helpers.waiting import wait_for

PERIOD, TIMEOUT, FAILURES = 0.5, 0.5, 3
"""The probe's periodSeconds, timeoutSeconds, failureThreshold (deploy: 10, 3, 3)."""
GRACE, MONITOR = 2.0, 0.5
"""--node-monitor-grace-period and --node-monitor-period (Kubernetes: 50 s and 5 s)."""
MAX_AGE = 1.0
"""The extender's --stale-after."""
SLACK = 6.0
"""Scheduling noise on a loaded machine: watch delivery, process start, probe threads."""

AGENT_NAMESPACE = "rte"
AGENT_LABELS = {"app.kubernetes.io/name": "rte", "app.kubernetes.io/component": "node-agent"}
NO_LEASE = ("--lease-duration", "0")


@pytest.fixture
def extender(tmp_path: Path, api: FakeApiServer) -> Iterator[Client]:
    """``rte extender`` with its defaults for the heartbeat source, stale after ``MAX_AGE``."""
    log = tmp_path / "extender.log"
    argv = [sys.executable, "-m", "rte", "extender", "--listen", "127.0.0.1:0"]
    argv += ["--kubeconfig", str(api.write_kubeconfig(tmp_path / "extender-kubeconfig"))]
    argv += ["--stale-after", f"{MAX_AGE}s", "--stale-action", "unschedulable"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTE_")}
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        found = wait_for(
            lambda: re.search(r"serving on (http://\S+)", log.read_text(errors="replace")), 15, "the extender"
        )
        client = Client(found.group(1))
        wait_for(lambda: client.get("/readyz")[0] == 200, 20, "the extender's lists")
        yield client
        client.close()
    finally:
        proc.terminate()
        proc.wait(10)


def admits(extender: Client) -> bool:
    probe = pod("probe", {"cpu": 2, "memory": GI}, scheduler=PROFILE)
    status, result = extender.post("filter", {"Pod": probe, "NodeNames": [NODE]})
    assert status == 200, result
    return NODE in (result.get("NodeNames") or [])


class Node:
    """The agent, its pod object, the kubelet's prober and the node lifecycle controller."""

    def __init__(self, api: FakeApiServer, agent: AgentProcess) -> None:
        self.agent = agent
        api.add_pod("rte-agent-x1", namespace=AGENT_NAMESPACE, node_name=NODE, labels=AGENT_LABELS)
        self.writer = PodStatusWriter(api, "rte-agent-x1", AGENT_NAMESPACE)
        self.prober = ReadinessProber(
            self.writer,
            lambda: f"http://127.0.0.1:{self.agent.port}",
            lambda: self.agent.alive,
            period=PERIOD,
            timeout=TIMEOUT,
            failure_threshold=FAILURES,
        ).start()
        self.lifecycle = NodeLifecycle(
            self.prober, [self.writer], grace=GRACE, monitor_period=MONITOR
        ).start()

    def close(self) -> None:
        self.prober.stop()
        self.lifecycle.stop()


@pytest.fixture
def node(api: FakeApiServer, start_agent: AgentFactory) -> Iterator[Node]:
    agent = start_agent(*NO_LEASE)
    wait_for(lambda: stored(api), 15, "the first NRT")
    n = Node(api, agent)
    yield n
    n.close()


def refused_within(extender: Client, bound: float, what: str) -> float:
    """Seconds until the extender refuses the node; fails past ``bound`` + slack."""
    start = time.monotonic()
    wait_for(lambda: not admits(extender), bound + SLACK, what)
    took = time.monotonic() - start
    print(f"{what}: refused after {took:.2f}s (bound {bound:.2f}s + slack)")
    return took


def test_no_lease_is_written_and_a_ready_agent_is_trusted(
    api: FakeApiServer, node: Node, extender: Client
) -> None:
    wait_for(lambda: admits(extender), 20, "the extender to trust the ready agent")
    assert api.list_objects("leases", AGENT_NAMESPACE) == []
    assert node.writer.flips and node.writer.flips[-1][1] is True


def test_a_killed_agent_is_distrusted_within_a_probe_period_and_the_max_age(
    node: Node, extender: Client
) -> None:
    wait_for(lambda: admits(extender), 20, "the extender to trust the ready agent")
    node.agent.proc.send_signal(signal.SIGKILL)
    refused_within(extender, PERIOD + MAX_AGE, "agent killed")
    node.agent.proc.wait(5)
    node.agent.returncode = 0  # killed on purpose: the fixture's clean-exit check is not for it


def test_a_hung_agent_is_distrusted_after_the_failed_probes_and_trusted_again(
    node: Node, extender: Client
) -> None:
    wait_for(lambda: admits(extender), 20, "the extender to trust the ready agent")
    node.agent.proc.send_signal(signal.SIGSTOP)
    try:
        refused_within(extender, FAILURES * (PERIOD + TIMEOUT) + MAX_AGE, "agent hung")
    finally:
        node.agent.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: admits(extender), 20, "the extender to trust the agent again")


def test_a_gone_node_is_distrusted_after_the_node_monitor_grace_period(node: Node, extender: Client) -> None:
    wait_for(lambda: admits(extender), 20, "the extender to trust the ready agent")
    node.prober.stop()  # the kubelet (and its node) stops reporting; the agent's process is moot
    node.agent.proc.send_signal(signal.SIGSTOP)
    try:
        refused_within(extender, GRACE + MONITOR + MAX_AGE, "node gone")
    finally:
        node.agent.proc.send_signal(signal.SIGCONT)


def test_an_agent_cut_off_from_the_apiserver_is_distrusted_once_it_stops_vouching(
    api: FakeApiServer, node: Node, extender: Client
) -> None:
    wait_for(lambda: admits(extender), 20, "the extender to trust the ready agent")
    # Only the agent's requests (its own NRT by name); the extender lists and watches the collection.
    api.faults.fail_next(10**6, 503, path=rf"noderesourcetopologies/{NODE}$")
    api_window = 3 * 1.0  # --ready-factor 3 (default) x --resync-interval 1s (the e2e agent's)
    try:
        refused_within(extender, api_window + FAILURES * (PERIOD + TIMEOUT) + MAX_AGE, "apiserver cut off")
    finally:
        api.faults.clear()
    wait_for(lambda: admits(extender), 20, "the extender to trust the agent again")
