"""Per-node statuses from decoded objects: ages, Lease staleness, fingerprints (rte.cluster.status)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rte.cluster.status import Marker, last_change, node_statuses
from rte.consumer.config import ResyncMethod
from rte.errors import InputError
from rte.model.vocabulary import FingerprintMethod, InformerMode
from rte.testing.views_cluster import GI, lease, node, nrt, pod

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
T = NOW.timestamp()
ZONE = {"cpu": (8, 8), "memory": (16 * GI, 16 * GI)}


def stamped(obj: dict, created: datetime, *changes: datetime) -> dict:
    """``obj`` as the apiserver returns it: a creation time and one managedFields entry per write."""
    obj["metadata"]["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    obj["metadata"]["managedFields"] = [
        {"manager": f"m{i}", "operation": "Update", "time": t.strftime("%Y-%m-%dT%H:%M:%SZ")}
        for i, t in enumerate(changes)
    ]
    return obj


def test_the_nrt_last_changed_at_its_newest_managed_fields_time() -> None:
    created = NOW - timedelta(days=3)
    obj = stamped(nrt("n", [ZONE]), created, NOW - timedelta(hours=2), NOW - timedelta(minutes=5))
    assert last_change(obj) == T - 300
    assert last_change(stamped(nrt("n", [ZONE]), created)) == created.timestamp()
    obj["metadata"]["managedFields"][0]["time"] = "yesterday"
    with pytest.raises(InputError, match=r"n: metadata.managedFields\[0\].time: not an RFC 3339 time"):
        last_change(obj)


def test_a_lease_is_stale_past_its_own_duration_unless_a_threshold_is_given() -> None:
    statuses = node_statuses(
        [node("a", {"cpu": 8}), node("b", {"cpu": 8})],
        [nrt("a", [ZONE]), nrt("b", [ZONE])],
        leases=[lease("a", NOW - timedelta(seconds=39)), lease("b", NOW - timedelta(seconds=41))],
        lease_namespace="rte",
    )
    a, b = statuses
    assert (a.lease_age(T), b.lease_age(T)) == (39.0, 41.0)
    assert not a.lease_stale(T, None) and b.lease_stale(T, None)
    assert b.markers(T) == [Marker.LEASE_STALE] and b.is_stale(T)
    assert not b.lease_stale(T, 60.0)
    assert a.lease_stale(T, 30.0)


def agent_pod(node_name: str, ready: bool, since: datetime, name: str = "") -> dict:
    return {
        "metadata": {"namespace": "rte", "name": name or f"rte-agent-{node_name}"},
        "spec": {"nodeName": node_name},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": str(ready),
                    "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            ]
        },
    }


def test_an_agent_pod_stands_in_for_the_lease_and_not_ready_is_stale() -> None:
    statuses = node_statuses(
        [node("fine", {"cpu": 8}), node("blind", {"cpu": 8}), node("surge", {"cpu": 8})],
        [nrt("fine", [ZONE]), nrt("blind", [ZONE]), nrt("surge", [ZONE])],
        leases=[],
        lease_namespace="rte",
        agent_pods=[
            agent_pod("fine", True, NOW - timedelta(hours=1)),
            agent_pod("blind", False, NOW - timedelta(seconds=75)),
            agent_pod("surge", False, NOW - timedelta(seconds=5), name="new"),
            agent_pod("surge", True, NOW - timedelta(days=1), name="old"),
        ],
    )
    fine, blind, surge = sorted(statuses, key=lambda s: ["fine", "blind", "surge"].index(s.name))
    assert fine.markers(T) == [] and not fine.is_stale(T)
    assert blind.markers(T) == [Marker.AGENT_NOT_READY] and blind.is_stale(T)
    assert blind.agent_unready_for(T) == 75.0
    assert surge.agent is not None and surge.agent.pod == "rte/old" and not surge.is_stale(T)


def test_what_is_missing_is_marked_but_only_stale_data_counts_as_stale() -> None:
    statuses = node_statuses(
        [node("bare", {"cpu": 8}), node("quiet", {"cpu": 8})],
        [nrt("quiet", [ZONE], pods=None), nrt("gone", [ZONE])],
        leases=[],
        lease_namespace="rte",
        pods_by_node={"quiet": [], "gone": []},
    )
    by_name = {s.name: s for s in statuses}
    assert [s.name for s in statuses] == ["bare", "gone", "quiet"]
    assert by_name["bare"].markers(T) == [Marker.NO_NRT]
    assert by_name["gone"].markers(T) == [Marker.NO_NODE, Marker.NO_LEASE]
    assert by_name["quiet"].markers(T) == [Marker.NO_LEASE, Marker.NO_FINGERPRINT]
    assert not any(s.is_stale(T) for s in statuses)
    unread = node_statuses([node("quiet", {"cpu": 8})], [nrt("quiet", [ZONE])])
    assert unread[0].markers(T) == []  # Leases and pods not read: nothing to say about them


def test_the_fingerprint_counts_the_node_pods_with_the_consumer_rules() -> None:
    exclusive = pod("db", {"cpu": 2, "memory": GI}, node_name="n")
    shared = pod("web", {}, node_name="n")
    done = pod("job", {"cpu": 1, "memory": GI}, node_name="n", phase="Succeeded")
    elsewhere = pod("other", {"cpu": 1, "memory": GI}, node_name="m")

    def result(published: list[tuple[str, str]], method: FingerprintMethod, mode: InformerMode) -> str:
        (status,) = node_statuses(
            [],
            [nrt("n", [ZONE], pods=published, method=method)],
            pods_by_node={"n": [exclusive, shared, done], "m": [elsewhere]},
            informer_mode=mode,
            resync_method=ResyncMethod.AUTODETECT,
        )
        assert status.fingerprint is not None
        return status.fingerprint.result.value

    exclusive_method = FingerprintMethod.WITH_EXCLUSIVE_RESOURCES
    # Dedicated counts terminal pods; only exclusive ones under with-exclusive-resources.
    assert (
        result([("default", "db"), ("default", "job")], exclusive_method, InformerMode.DEDICATED) == "match"
    )
    assert result([("default", "db")], exclusive_method, InformerMode.SHARED) == "match"
    assert result([("default", "db")], exclusive_method, InformerMode.DEDICATED) == "mismatch"
    every = [("default", "db"), ("default", "web"), ("default", "job")]
    assert result(every, FingerprintMethod.ALL, InformerMode.DEDICATED) == "match"


def test_a_malformed_nrt_is_an_input_error_naming_it() -> None:
    bad = nrt("n", [ZONE])
    bad["zones"][0]["resources"][0]["available"] = "lots"
    with pytest.raises(InputError, match=r"^NodeResourceTopology n: zones\[0\].resources\[0\].available"):
        node_statuses([], [bad])


def test_an_nrt_without_a_topology_manager_policy_is_marked_but_not_stale() -> None:
    """Issue #28: consumers read a missing policy as none; top names it instead of hiding it."""
    (blind,) = node_statuses([node("n", {"cpu": 8})], [nrt("n", [ZONE], policy=None)])
    assert not blind.policy_known
    assert blind.markers(T) == [Marker.NO_POLICY]
    assert not blind.is_stale(T)
    (known,) = node_statuses([node("n", {"cpu": 8})], [nrt("n", [ZONE], policy="none")])
    assert known.policy_known and known.markers(T) == []
