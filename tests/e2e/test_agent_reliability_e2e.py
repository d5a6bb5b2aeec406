"""``rte run`` as a real process against a misbehaving kubelet (issue #26): each fault must make
the agent say so (``/readyz`` 503 naming it, the heartbeat Lease withheld) and let go by itself
once the kubelet behaves again.

The fake kubelet is real gRPC on a unix socket (:mod:`rte.testing.fake_kubelet`); the apiserver
double serves the real ``kubernetes`` client.
"""

from __future__ import annotations

import time

from rte.testing import scenarios as sc
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.e2e.test_agent_e2e import converged, exclusive_pod, first_publish
from tests.helpers.e2e import NODE, NRT, AgentFactory, AgentProcess, content, stored
from tests.helpers.waiting import wait_for

WITHHELD = 'rte_agent_heartbeats_total{result="withheld"}'


def renew_time(api: FakeApiServer) -> str | None:
    lease = api.get_object("leases", NODE, "rte")
    return None if lease is None else str(lease["spec"]["renewTime"])


def assert_lease_withheld(agent: AgentProcess, api: FakeApiServer) -> str | None:
    """Once a renewal was withheld, none that began before can still be in flight: the Lease
    must then stay as it is (--lease-duration 4s renews every second)."""
    before = agent.metric(WITHHELD, 0)
    wait_for(lambda: agent.metric(WITHHELD, 0) > before, 5, "a withheld renewal")
    last = renew_time(api)
    time.sleep(2.0)  # an observation window of two renewal intervals, not a wait for a condition
    assert renew_time(api) == last, "the Lease vouched for an agent that cannot trust its kubelet"
    return last


def test_an_undecodable_allocatable_answer_makes_the_agent_unready_and_withholds_the_lease(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Item 3: before, such an answer was counted and nothing else (readyz 200, Lease renewed)."""
    agent = start_agent("--allocatable-refresh", "500ms", "--resync-interval", "1h")
    first_publish(agent, api, kubelet)
    wait_for(lambda: renew_time(api), 10, "the heartbeat Lease")
    kubelet.serve_raw("GetAllocatableResources", b"\x0a\xff\xff")  # a field cut short
    wait_for(lambda: agent.get("/readyz")[0] == 503, 5, "/readyz to fail")
    reason = agent.get("/readyz")[1]
    assert reason.startswith("kubelet-allocatable: kubelet GetAllocatableResources response from ")
    assert "does not decode" in reason
    last = assert_lease_withheld(agent, api)
    assert agent.log.count("kubelet GetAllocatableResources failed: ") == 1

    kubelet.serve_raw("GetAllocatableResources", None)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz once the answers decode")
    wait_for(lambda: renew_time(api) != last, 5, "the Lease renewed again")
    assert agent.alive


def test_a_list_far_above_max_pods_is_refused_unready_and_nothing_is_published(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Item 4: a List of more pods than the cap is refused before decoding, as bad data."""
    agent = start_agent("--max-listed-pods", "40", "--resync-interval", "1h")
    first_publish(agent, api, kubelet)
    wait_for(lambda: renew_time(api), 10, "the heartbeat Lease")
    writes = api.writes(NRT)
    listed = kubelet.pods()
    flood = [sc.pod("flood", f"p{i}", sc.container("c", [], (), [])) for i in range(60)]
    kubelet.set_pods(listed + flood)
    wait_for(lambda: agent.get("/readyz")[0] == 503, 5, "/readyz to fail")
    reason = agent.get("/readyz")[1]
    assert reason.startswith("kubelet: kubelet List response from "), reason
    assert "lists more than 40 pods, above the limit of 40" in reason
    assert_lease_withheld(agent, api)
    assert api.writes(NRT) == writes  # nothing computed from the flood was published

    kubelet.set_pods(listed)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 5, "/readyz once the List is back under the cap")
    assert agent.alive


def test_an_nrt_deleted_or_edited_by_someone_else_is_repaired_at_once_not_at_the_resync(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Item 7: with the resync an hour away, only the watch of the agent's own NRT can notice."""
    from kubernetes import client

    agent = start_agent("--resync-interval", "1h")
    first_publish(agent, api, kubelet)
    wait_for(lambda: agent.metric('rte_agent_triggers_total{reason="start"}', 0) == 1, 5, "metrics")
    good = content(stored(api))

    someone_else = api.api_client()
    client.CustomObjectsApi(someone_else).patch_cluster_custom_object(
        "topology.node.k8s.io",
        "v1alpha2",
        NRT,
        NODE,
        {"zones": []},
        field_manager="someone-else",
        _content_type="application/merge-patch+json",
    )
    someone_else.close()
    wait_for(lambda: content(stored(api)) == good, 5, "the edited NRT repaired")
    assert agent.metric('rte_agent_nrt_repairs_total{what="edited"}') == 1

    api.delete_object(NRT, NODE)
    wait_for(lambda: stored(api) is not None and content(stored(api)) == good, 5, "the NRT recreated")
    assert agent.metric('rte_agent_nrt_repairs_total{what="deleted"}') == 1
    assert agent.metric('rte_agent_nrt_repairs_total{what="edited"}') == 1  # our own writes are not repairs
    assert agent.alive


def test_a_pod_removal_is_one_nrt_patch_when_the_api_deletes_before_the_kubelet_lets_go(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Item 8: the API deletes a pod, then the kubelet's List drops it a moment later (here,
    once the agent's pod watch has seen the deletion). Before, the fingerprint went out first
    and the freed zones one poll later: two patches. Now one List snapshot gives both."""
    agent = start_agent("--resync-interval", "1h", "--allocatable-refresh", "0")
    first_publish(agent, api, kubelet)
    guaranteed = {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}
    api.add_pod(
        "leaving", node_name=NODE, containers=[{"name": "app", "image": "x", "resources": guaranteed}]
    )
    kubelet.add_pod(exclusive_pod("leaving", [26, 28]))
    converged(api, kubelet, 5, "the pod in the NRT")
    patches = api.count("patch", NRT)
    pods_seen = agent.metric('rte_agent_triggers_total{reason="pods"}', 0)
    ok_cycles = agent.metric('rte_agent_cycles_total{result="ok"}', 0)

    api.delete_pod("leaving")
    wait_for(lambda: agent.metric('rte_agent_triggers_total{reason="pods"}', 0) > pods_seen, 5, "the watch")
    # The cycle that trigger starts, on the List that still holds the pod, has nothing to write.
    wait_for(lambda: agent.metric('rte_agent_cycles_total{result="ok"}', 0) > ok_cycles, 5, "its cycle")
    assert api.count("patch", NRT) == patches
    kubelet.remove_pod("default", "leaving")
    converged(api, kubelet, 5, "the pod gone from the NRT")
    assert api.count("patch", NRT) == patches + 1
    assert agent.alive


def test_a_list_stuck_longer_than_the_lease_makes_the_agent_unready_while_it_hangs(
    start_agent: AgentFactory, api: FakeApiServer, kubelet: FakeKubelet
) -> None:
    """Item 4's watchdog: the loop is stuck inside one List (a kubelet taking 10 s, under a 30 s
    call deadline); the probe and the heartbeat, on their own threads, stop vouching once it has
    run longer than the Lease duration (4 s here), and the agent is still alive, not restarted."""
    agent = start_agent("--kubelet-timeout", "30s", "--resync-interval", "1h", "--allocatable-refresh", "0")
    first_publish(agent, api, kubelet)
    wait_for(lambda: renew_time(api), 10, "the heartbeat Lease")
    kubelet.delay("List", 10.0)
    wait_for(lambda: agent.get("/readyz")[0] == 503, 8, "/readyz to fail while the List hangs")
    reason = agent.get("/readyz")[1]
    assert reason.startswith("busy: podresources List running for "), reason
    assert "(longer than the Lease duration, 4s)" in reason
    assert agent.get("/healthz")[0] == 200
    assert_lease_withheld(agent, api)
    kubelet.delay("List", 0)
    wait_for(lambda: agent.get("/readyz")[0] == 200, 15, "/readyz once the List returns")
    assert agent.alive
