"""``rte run`` as a real process against the fake kubelet (gRPC) and the apiserver double (HTTP).

Each test ends with the NRT the agent must publish stored in the apiserver double and the
agent still running; the harness then stops it with SIGTERM and requires exit status 0.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from rte.testing import scenarios as sc
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.e2e import (
    KUBELET_CONFIG,
    NODE,
    NRT,
    SCENARIO,
    SYSFS,
    AgentFactory,
    AgentProcess,
    content,
    expected_nrt,
    stored,
)
from tests.helpers.waiting import wait_for

GiB = 1024**3


def exclusive_pod(name: str, cpus: list[int], zone: int = 0) -> object:
    """A kubelet pod with exclusive CPUs and memory on one zone (even CPUs are NUMA 0 here)."""
    return sc.pod("default", name, sc.container("app", cpus, (), [sc.memory("memory", GiB, zone)]))


def converged(api: FakeApiServer, kubelet: FakeKubelet, timeout: float = 5.0, what: str = "the NRT") -> None:
    """Wait until the stored NRT equals what the agent must compute right now."""
    wait_for(lambda: content(stored(api)) == content(expected_nrt(kubelet, api)), timeout, what)


def first_publish(agent: AgentProcess, api: FakeApiServer, kubelet: FakeKubelet) -> None:
    converged(api, kubelet, 60, "the first publish")  # the deadline ends only a failed run
    assert agent.alive


def test_the_first_publish_stores_the_computed_nrt_owned_by_the_node(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    obj = stored(api)
    assert obj is not None
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": api.node_uid(NODE)}
    ]
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to answer 200")
    assert agent.get("/healthz")[0] == 200
    assert agent.metric('rte_agent_nrt_writes_total{outcome="created"}') == 1
    assert agent.metric('rte_agent_zone_available{zone="node-0",resource="cpu"}') > 0
    wait_for(lambda: api.get_object("leases", NODE, "rte"), 5, "the heartbeat Lease")
    assert agent.alive


def test_the_running_agent_has_not_loaded_pydantic(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    # Issue #27's memory budget: the agent's lean API client and kubeconfig reader keep pydantic
    # (the generated ApiClient's) and requests/oauthlib (kube_config's) out of the process, 14.6
    # MiB. pydantic's native module would show in the process's mappings, as gRPC's does.
    agent = start_agent("--lease-duration", "0")  # the heartbeat, off by default, loads the Lease API
    first_publish(agent, api, kubelet)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to answer 200")
    maps = Path(f"/proc/{agent.proc.pid}/maps").read_text()
    assert "cygrpc" in maps
    assert "_pydantic_core" not in maps


def test_a_pod_added_then_removed_at_the_kubelet_reaches_the_nrt_within_two_seconds(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    notify = tmp_path / "run" / "notify"
    touched = notify.stat().st_mtime_ns
    before = content(stored(api))

    kubelet.add_pod(exclusive_pod("burst", [6, 8]))
    start = time.monotonic()
    converged(api, kubelet, 2.0, "the added pod in the NRT")
    assert time.monotonic() - start < 2.0
    assert content(stored(api)) != before

    kubelet.remove_pod("default", "burst")
    converged(api, kubelet, 2.0, "the removed pod gone from the NRT")
    assert content(stored(api)) == before
    assert notify.stat().st_mtime_ns == touched  # nobody touched the notify file
    assert agent.alive


def test_a_quiet_node_causes_no_writes_although_the_agent_keeps_checking(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    wait_for(lambda: agent.metric("rte_agent_ready") == 1, 5, "readiness")
    writes, polls = api.writes(NRT), agent.metric("rte_agent_kubelet_polls_total")
    reads = api.count("get", NRT)
    # Watch until the agent has checked often (7 polls, 1.4 s at the e2e 200 ms) and its resync
    # timer has re-read the stored object: however slowly a busy machine runs it, then no write.
    wait_for(lambda: agent.metric("rte_agent_kubelet_polls_total") - polls >= 7, 30, "seven kubelet polls")
    wait_for(lambda: api.count("get", NRT) > reads, 30, "the resync timer to re-read the stored NRT")
    assert api.writes(NRT) == writes
    assert agent.alive


def test_an_apiserver_unreachable_at_start_is_retried_until_it_answers(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    api.refuse_connections()
    agent = start_agent()
    wait_for(lambda: "apiserver" in agent.get("/readyz")[1], 15, "/readyz to report the apiserver")
    assert agent.get("/readyz")[0] == 503
    assert agent.get("/healthz")[0] == 200  # unready, not dead
    api.accept_connections()
    converged(api, kubelet, 5, "the publish once the apiserver answers")
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to recover")
    assert agent.alive


def test_conflicts_throttling_server_errors_and_timeouts_are_retried(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)

    api.faults.conflict_next_writes(2, resource=NRT)
    kubelet.add_pod(exclusive_pod("p1", [6, 8]))
    converged(api, kubelet, 5, "the NRT after two 409s")

    api.faults.throttle_next(2, retry_after=1, verb="patch", resource=NRT)
    kubelet.add_pod(exclusive_pod("p2", [10, 12]))
    converged(api, kubelet, 8, "the NRT after two 429s")

    api.faults.fail_next(3, 500, verb="patch", resource=NRT)
    kubelet.add_pod(exclusive_pod("p3", [14, 16]))
    converged(api, kubelet, 8, "the NRT after three 500s")

    patches = len(api.requests)
    api.faults.set_latency(1.5, verb="patch", resource=NRT)  # longer than --request-timeout 1s
    kubelet.add_pod(exclusive_pod("p4", [18, 20]))
    converged(api, kubelet, 10, "the NRT while every patch outlasts the agent's timeout")
    assert any(r.verb == "patch" and r.duration >= 1.4 for r in api.requests[patches:])
    api.faults.set_latency(0)
    assert api.faults.pending == 0
    assert agent.alive


def test_a_missing_crd_is_waited_for_and_used_once_installed(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    api.uninstall_crd()
    agent = start_agent()
    wait_for(lambda: "CRD" in agent.get("/readyz")[1], 15, "/readyz to report the missing CRD")
    assert stored(api) is None
    api.install_crd()
    converged(api, kubelet, 5, "the publish once the CRD exists")
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to recover")
    assert agent.alive


def test_an_nrt_deleted_behind_the_agents_back_is_recreated(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    assert api.delete_object(NRT, NODE)
    converged(api, kubelet, 5, "the NRT to be recreated")
    assert agent.metric('rte_agent_nrt_writes_total{outcome="recreated"}') == 1
    assert agent.alive


def test_a_kubelet_restart_is_ridden_out_and_what_changed_meanwhile_is_published(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    kubelet.stop()  # the socket file disappears
    wait_for(lambda: "kubelet" in agent.get("/readyz")[1], 5, "/readyz to report the kubelet")
    kubelet.add_pod(exclusive_pod("while-down", [22, 24]))
    kubelet.start()
    converged(api, kubelet, 5, "the NRT after the kubelet came back")
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz to recover")
    assert agent.metric('rte_agent_podresources_errors_total{method="List",kind="unavailable"}') >= 1
    assert agent.alive


def test_the_pod_watch_puts_pods_the_kubelet_runs_into_the_fingerprint(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent()
    first_publish(agent, api, kubelet)
    empty = stored(api)["attributes"]  # type: ignore[index]
    guaranteed = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    api.add_pod("pinned", node_name=NODE, containers=[{"name": "app", "image": "x", "resources": guaranteed}])
    kubelet.add_pod(exclusive_pod("pinned", [26, 28]))
    converged(api, kubelet, 5, "the fingerprint to include the pod")
    assert stored(api)["attributes"] != empty  # type: ignore[index]
    assert agent.alive


def test_touching_the_notify_file_triggers_a_cycle_when_polling_is_off(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet, tmp_path: Path
) -> None:
    agent = start_agent("--poll-interval", "0", "--resync-interval", "1h")
    first_publish(agent, api, kubelet)
    kubelet.add_pod(exclusive_pod("hooked", [30, 32]))
    (tmp_path / "run" / "notify").touch()
    converged(api, kubelet, 2, "the NRT after touching the notify file")
    assert agent.metric('rte_agent_triggers_total{reason="notify"}') >= 1
    assert agent.alive


def test_sigterm_in_the_middle_of_a_publish_exits_zero_within_the_shutdown_timeout(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    agent = start_agent("--request-timeout", "10s")
    first_publish(agent, api, kubelet)
    api.faults.set_latency(8, verb="patch", resource=NRT)
    kubelet.add_pod(exclusive_pod("slow", [34, 36]))
    patches = api.count("patch", NRT)
    wait_for(lambda: "cycle" in agent.get("/healthz")[1], 5, "the agent to be inside a cycle")
    assert agent.stop(timeout=10) == 0
    # The apiserver records a request when it answers, 8 s after the patch came: the agent left
    # before (within --shutdown-timeout 2s), without waiting for its publish. A condition on
    # what happened, not on the wall time a busy machine stretches.
    assert api.count("patch", NRT) == patches
    api.faults.set_latency(0)


def test_once_without_publishing_prints_the_object_and_needs_no_cluster(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rte",
            "run",
            "--once",
            "--no-publish",
            "-o",
            "json",
            "--node-name",
            NODE,
            "--podresources",
            str(SCENARIO),
            "--sysfs",
            str(SYSFS),
            "--kubelet-config",
            str(KUBELET_CONFIG),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    import json

    with FakeKubelet(scenario=SCENARIO) as kubelet, FakeApiServer() as api:
        assert content(json.loads(result.stdout)) == content(expected_nrt(kubelet, api, pod_watch=False))
