"""``rte run`` under faults, as real processes: what the agent claims must stay true.

The fake kubelet runs in a process of its own where a test kills it with SIGKILL (the socket
file stays behind, connections are refused, as after a kubelet crash); the apiserver double
serves real HTTP to the real ``kubernetes`` client and refuses connections on demand; the
extender runs as ``rte extender`` to show what a consumer concludes from the agent's Lease.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rte.testing import scenarios as sc
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.e2e import (
    NODE,
    NRT,
    SYSFS,
    AgentFactory,
    AgentProcess,
    KubeletProcess,
    content,
    expected_nrt,
    reject_pod,
    stored,
)
from tests.helpers.extender import PROFILE, Client, pod
from tests.helpers.waiting import wait_for

GiB = 1024**3
LEASES = "leases"

# With the allocatable refresh and the resync timer out of the way, a cycle runs only when a
# trigger asks for one, so what a pod-watch trigger alone does is observable.
ONLY_TRIGGERED_CYCLES = ("--allocatable-refresh", "0", "--resync-interval", "1h")


@pytest.fixture
def kubelet_process() -> Iterator[KubeletProcess]:
    proc = KubeletProcess().start()
    yield proc
    proc.close()


def renew_time(api: FakeApiServer) -> str | None:
    lease = api.get_object(LEASES, NODE, "rte")
    return None if lease is None else str(lease["spec"]["renewTime"])


def cycles(agent: AgentProcess) -> tuple[float, float]:
    """(ok, failed) cycles so far."""
    return (
        agent.metric('rte_agent_cycles_total{result="ok"}', 0),
        agent.metric('rte_agent_cycles_total{result="failed"}', 0),
    )


def test_a_pod_watch_cycle_while_the_kubelet_is_dead_neither_calls_it_recovered_nor_publishes(
    start_agent: AgentFactory, api: FakeApiServer, kubelet_process: KubeletProcess
) -> None:
    agent = start_agent("--podresources", kubelet_process.endpoint, *ONLY_TRIGGERED_CYCLES)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 15, "the first publish")
    writes = api.writes(NRT)
    published = agent.metric("rte_agent_last_successful_publish_timestamp_seconds")

    kubelet_process.kill()
    wait_for(lambda: "kubelet" in agent.get("/readyz")[1], 5, "/readyz to report the kubelet")
    ok, failed = cycles(agent)
    pods = agent.metric('rte_agent_triggers_total{reason="pods"}', 0)
    api.add_pod("arrives-while-blind", node_name=NODE)

    wait_for(lambda: agent.metric('rte_agent_triggers_total{reason="pods"}', 0) > pods, 5, "the pod trigger")
    wait_for(lambda: sum(cycles(agent)) > ok + failed, 5, "the cycle the pod triggered")
    assert cycles(agent)[0] == ok, "a cycle without the kubelet counted as a success"
    assert agent.get("/readyz")[0] == 503
    assert "answers again" not in agent.log
    assert api.writes(NRT) == writes
    assert agent.metric("rte_agent_last_successful_publish_timestamp_seconds") == published
    assert agent.alive


def test_the_lease_is_not_renewed_while_the_kubelet_is_dead(
    start_agent: AgentFactory, api: FakeApiServer, kubelet_process: KubeletProcess
) -> None:
    agent = start_agent("--podresources", kubelet_process.endpoint)  # --lease-duration 4s: every 1s
    wait_for(lambda: renew_time(api), 15, "the heartbeat Lease")
    withheld = 'rte_agent_heartbeats_total{result="withheld"}'
    before = agent.metric(withheld, 0)
    kubelet_process.kill()
    wait_for(lambda: "kubelet" in agent.get("/readyz")[1], 5, "/readyz to report the kubelet")
    # Once a renewal was withheld, no renewal that began before the kill can still be in flight.
    wait_for(lambda: agent.metric(withheld, 0) > before, 5, "a withheld renewal")
    last = renew_time(api)
    time.sleep(3.0)  # an observation window of three renewal intervals, not a wait for a condition
    assert renew_time(api) == last, "the Lease vouched for an agent that cannot see its kubelet"

    kubelet_process.start()
    wait_for(lambda: renew_time(api) != last, 5, "the Lease renewed once the kubelet is back")
    assert agent.alive


def test_no_lease_is_created_while_nothing_was_published(
    start_agent: AgentFactory, api: FakeApiServer
) -> None:
    api.uninstall_crd()
    agent = start_agent()
    wait_for(lambda: "CRD" in agent.get("/readyz")[1], 15, "/readyz to report the missing CRD")
    time.sleep(2.0)  # two renewal intervals in which nothing may vouch for an NRT that does not exist
    assert api.get_object(LEASES, NODE, "rte") is None
    api.install_crd()
    wait_for(lambda: renew_time(api), 5, "the Lease once the NRT exists")
    assert stored(api) is not None
    assert agent.alive


@pytest.fixture
def extender_url(tmp_path: Path, api: FakeApiServer) -> Iterator[str]:
    """``rte extender`` over the same apiserver double, trusting an agent's Lease for 3 seconds."""
    log = tmp_path / "extender.log"
    argv = [sys.executable, "-m", "rte", "extender", "--listen", "127.0.0.1:0"]
    argv += ["--kubeconfig", str(api.write_kubeconfig(tmp_path / "extender-kubeconfig"))]
    argv += ["--heartbeat-source", "lease", "--stale-after", "3s", "--stale-action", "unschedulable"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        found = wait_for(
            lambda: re.search(r"serving on (http://\S+)", log.read_text(errors="replace")), 15, "the extender"
        )
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


def admits(extender: Client) -> bool:
    probe = pod("probe", {"cpu": 2, "memory": GiB}, scheduler=PROFILE)
    status, result = extender.post("filter", {"Pod": probe, "NodeNames": [NODE]})
    assert status == 200, result
    names: list[str] = result.get("NodeNames") or []
    return NODE in names


def test_the_extender_stops_trusting_a_node_whose_agent_lost_its_kubelet_and_trusts_it_again(
    start_agent: AgentFactory, api: FakeApiServer, kubelet_process: KubeletProcess, extender_url: str
) -> None:
    agent = start_agent("--podresources", kubelet_process.endpoint)
    wait_for(lambda: renew_time(api) and stored(api), 15, "the NRT and the heartbeat Lease")
    extender = Client(extender_url)
    try:
        wait_for(lambda: admits(extender), 15, "the extender to admit a pod on the node")
        kubelet_process.kill()
        # Within the max age (3s) and a renewal interval (1s) of the kill, with room for a busy machine.
        wait_for(lambda: not admits(extender), 10, "the extender to stop trusting the blind agent's NRT")
        kubelet_process.start()
        wait_for(lambda: admits(extender), 10, "the extender to trust the node again")
    finally:
        extender.close()
    assert agent.alive


def break_file(path: Path) -> Path:
    """Make ``path`` unreadable (a directory in its place: reading it fails with EISDIR, even as root)."""
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    path.mkdir()
    return aside


def test_an_unreadable_sysfs_file_keeps_pod_changes_flowing_on_the_last_good_machine_model(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> None:
    sysfs = tmp_path / "sys"
    shutil.copytree(SYSFS, sysfs, symlinks=True)
    agent = start_agent("--sysfs", str(sysfs))  # --resync-interval 1s re-reads sysfs every second
    wait_for(lambda: content(stored(api)) == content(expected_nrt(kubelet, api)), 15, "the first publish")

    distance = sysfs / "devices" / "system" / "node" / "node0" / "distance"
    aside = break_file(distance)
    wait_for(lambda: agent.get("/readyz")[1].startswith("sysfs: "), 5, "/readyz to report sysfs")
    assert agent.get("/readyz")[0] == 503
    assert agent.metric("rte_agent_sysfs_read_failing") == 1
    assert re.search(r"sysfs.*distance.*last good machine", agent.log)

    kubelet.add_pod(sc.pod("default", "while-broken", sc.container("app", [6, 8], (), [])))
    # expected_nrt reads the intact fixture: the last good model is the machine as it was.
    wait_for(
        lambda: content(stored(api)) == content(expected_nrt(kubelet, api)), 5, "the pod change published"
    )

    distance.rmdir()
    aside.rename(distance)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to recover")
    assert agent.metric("rte_agent_sysfs_read_failing") == 0
    assert "sysfs readable again" in agent.log
    assert agent.alive


def test_an_agent_started_on_an_unreadable_sysfs_retries_unready_and_publishes_once_it_reads(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> None:
    sysfs = tmp_path / "sys"
    shutil.copytree(SYSFS, sysfs, symlinks=True)
    distance = sysfs / "devices" / "system" / "node" / "node0" / "distance"
    aside = break_file(distance)
    agent = start_agent("--sysfs", str(sysfs))  # --retry-base 100ms, --retry-cap 1s

    # It used to exit 2 here, which a DaemonSet turns into a crash loop.
    status, reason = wait_for(
        lambda: (lambda r: r if r[1].startswith("sysfs: ") else None)(agent.get("/readyz")), 15, "/readyz"
    )
    assert status == 503
    assert str(distance) in reason and "no machine model yet" in reason
    assert agent.get("/healthz")[0] == 200
    assert agent.metric("rte_agent_sysfs_read_failing") == 1
    failed = 'rte_agent_cycles_total{result="failed"}'
    wait_for(lambda: agent.metric(failed, 0) >= 3, 10, "the agent to retry")
    assert stored(api) is None and renew_time(api) is None  # nothing published, nothing vouched for
    assert agent.log.count("cycle failed: sysfs: ") == 1, "a warning per retry instead of one"

    distance.rmdir()
    aside.rename(distance)
    wait_for(lambda: content(stored(api)) == content(expected_nrt(kubelet, api)), 10, "the first publish")
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to recover")
    assert agent.metric("rte_agent_sysfs_read_failing") == 0
    assert "sysfs readable again" in agent.log
    assert agent.alive


def test_an_apiserver_outage_on_a_quiet_node_makes_the_agent_unready_within_the_lease_duration(
    start_agent: AgentFactory, api: FakeApiServer
) -> None:
    # No resync for an hour: on this quiet node only the heartbeat talks to the apiserver.
    agent = start_agent("--resync-interval", "1h")
    wait_for(lambda: agent.get("/readyz")[0] == 200, 15, "readiness")
    wait_for(lambda: renew_time(api), 5, "the heartbeat Lease")
    api.refuse_connections()
    # Within the Lease duration (4s) of the last answer, with room for a busy machine.
    _, reason = wait_for(
        lambda: (lambda r: r if r[0] == 503 else None)(agent.get("/readyz")), 10, "/readyz to fail"
    )
    assert reason.startswith("apiserver: no answer for")
    assert agent.get("/healthz")[0] == 200  # unready, not dead
    api.accept_connections()
    wait_for(lambda: agent.get("/readyz")[0] == 200, 10, "/readyz to recover")
    assert agent.alive


def test_a_pod_the_kubelet_rejects_for_alignment_is_counted_once_logged_and_refreshes_at_once(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent("--resync-interval", "1h", "--allocatable-refresh", "0")
    wait_for(lambda: content(stored(api)) == content(expected_nrt(kubelet, api)), 15, "the first publish")
    tae = 'rte_agent_topology_affinity_errors_total{reason="TopologyAffinityError"}'
    smt = 'rte_agent_topology_affinity_errors_total{reason="SMTAlignmentError"}'
    reads = api.count("get", NRT)

    guaranteed: dict[str, Any] = {"requests": {"cpu": "4"}, "limits": {"cpu": "4", "memory": "1Gi"}}
    api.add_pod(
        "misplaced", node_name=NODE, containers=[{"name": "app", "image": "x", "resources": guaranteed}]
    )
    api.add_pod("out-of-cpu", node_name=NODE)
    reject_pod(
        api, "misplaced", "TopologyAffinityError", "Resources cannot be allocated with Topology locality"
    )
    reject_pod(api, "out-of-cpu", "OutOfcpu", "Node didn't have enough resource: cpu")
    wait_for(lambda: agent.metric(tae) == 1, 5, "the rejection in the metric")
    assert re.search(r"default/misplaced.*TopologyAffinityError", agent.log)
    assert "out-of-cpu" not in agent.log
    wait_for(
        lambda: agent.metric('rte_agent_triggers_total{reason="admission-error"}', 0) >= 1, 2, "a trigger"
    )
    # The refresh re-reads the stored NRT: the scheduler's view was wrong, so nothing is assumed.
    wait_for(lambda: api.count("get", NRT) > reads, 5, "the refresh to re-read the stored NRT")

    lists = api.count("list", "pods")
    api.expire_watches()  # the pod watch must list again, and sees the same failed pod
    wait_for(lambda: api.count("list", "pods") > lists, 10, "the pod watch to list again")
    api.add_pod("smt", node_name=NODE)
    reject_pod(api, "smt", "SMTAlignmentError", "SMT Alignment Error: not enough free physical CPUs")
    wait_for(lambda: agent.metric(smt) == 1, 5, "the second rejection")
    assert agent.metric(tae) == 1, "a relist counted the same pod twice"
    assert agent.alive
