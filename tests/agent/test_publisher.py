"""The NRT publisher, through the real kubernetes client against the apiserver double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rte.agent.publish.nrtpatch import merge_patch
from rte.agent.publish.publisher import Publisher, PublishOutcome
from rte.errors import PublishError, UnavailableError
from rte.model import attributes as names
from rte.model.nrt import PLURAL, to_nrt
from rte.model.topology import NodeTopology, OwnerReference
from rte.runtime.kubeclient import load_api_client
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import NODE, topology, wait_until, with_pods
from tests.helpers.nrt_schema import schema_errors


class Sleeps(list[float]):
    """Records the publisher's backoff sleeps instead of sleeping; can run a hook on each."""

    def __init__(self) -> None:
        super().__init__()
        self.hook: Any = None

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        if self.hook is not None:
            self.hook()


@pytest.fixture
def api(fake_apiserver: FakeApiServer) -> FakeApiServer:
    fake_apiserver.register_node(NODE)
    return fake_apiserver


@pytest.fixture
def api_client(api: FakeApiServer, tmp_path: Path) -> Iterator[Any]:
    client = load_api_client(str(api.write_kubeconfig(tmp_path / "kubeconfig")), qps=0, timeout=2.0)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def publisher(api_client: Any, sleeps: Sleeps) -> Publisher:
    return Publisher(api_client, NODE, sleep=sleeps, rng=lambda: 0.5)


def stored(api: FakeApiServer) -> dict[str, Any]:
    obj = api.nrt(NODE)
    assert obj is not None
    return obj


def nrt_requests(api: FakeApiServer) -> list[tuple[str, int]]:
    return [(r.verb, r.code) for r in api.requests if r.resource == PLURAL]


# -- create, skip, patch ----------------------------------------------------------------------------


def test_the_first_publish_creates_the_nrt_owned_by_its_node(
    api: FakeApiServer, publisher: Publisher
) -> None:
    assert publisher.publish(topology()) is PublishOutcome.CREATED
    obj = stored(api)
    assert obj["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": api.node_uid(NODE)}
    ]
    assert schema_errors(obj) == []
    assert {k: obj[k] for k in ("zones", "attributes", "topologyPolicies")} == {
        k: to_nrt(topology())[k] for k in ("zones", "attributes", "topologyPolicies")
    }
    assert [m["manager"] for m in obj["metadata"]["managedFields"]] == ["rte-agent"]
    assert nrt_requests(api) == [("get", 404), ("create", 201)]
    assert api.count("get", "nodes") == 1


def test_publishing_the_same_topology_again_sends_no_request_at_all(
    api: FakeApiServer, publisher: Publisher
) -> None:
    publisher.publish(topology())
    api.clear_requests()
    for _ in range(3):
        assert publisher.publish(topology()) is PublishOutcome.SKIPPED
    assert api.requests == []


def test_an_agent_restart_with_an_unchanged_topology_reads_once_and_writes_nothing(
    api: FakeApiServer, api_client: Any, publisher: Publisher
) -> None:
    publisher.publish(topology())
    rv = stored(api)["metadata"]["resourceVersion"]
    api.clear_requests()
    restarted = Publisher(api_client, NODE)
    assert restarted.publish(topology()) is PublishOutcome.SKIPPED
    assert api.writes() == 0
    assert stored(api)["metadata"]["resourceVersion"] == rv


def test_a_changed_topology_is_one_merge_patch_and_the_result_validates(
    api: FakeApiServer, publisher: Publisher
) -> None:
    publisher.publish(topology())
    api.clear_requests()
    changed = with_pods(topology(cpu_available=26), pods=2)
    assert publisher.publish(changed) is PublishOutcome.PATCHED
    assert nrt_requests(api) == [("patch", 200)]
    assert api.requests[0].content_type == "application/merge-patch+json"
    assert api.requests[0].query["fieldManager"] == "rte-agent"
    obj = stored(api)
    assert schema_errors(obj) == []
    assert obj["zones"] == to_nrt(changed)["zones"]
    sign = changed.attribute(names.FINGERPRINT)
    assert obj["metadata"]["annotations"][names.FINGERPRINT_ANNOTATION] == sign
    assert publisher.publish(changed) is PublishOutcome.SKIPPED
    assert api.writes() == 1


def test_a_fingerprint_only_change_sends_neither_zones_nor_policies() -> None:
    server = to_nrt(topology())
    server["metadata"]["resourceVersion"] = "7"
    server["metadata"]["annotations"]["someone.example.com/note"] = "theirs"
    patch = merge_patch(server, to_nrt(with_pods(topology(), 5)), managed_annotations=())
    assert sorted(patch) == ["attributes", "metadata"]
    assert patch["metadata"] == {"annotations": {names.FINGERPRINT_ANNOTATION: "pfp0v0010000000000000005"}}
    assert len(patch["attributes"]) == 4, "lists are atomic: the whole attribute list is sent"


def test_the_patch_deletes_only_what_we_published_before_and_keeps_foreign_owners() -> None:
    server = to_nrt(topology())
    server["metadata"]["annotations"]["team.example.com/owner"] = "ops"
    server["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "old"},
        {"apiVersion": "example.com/v1", "kind": "Rack", "name": "r1", "uid": "r"},
    ]
    owner = OwnerReference("v1", "Node", NODE, "new")
    desired = to_nrt(NodeTopology(name=NODE, zones=topology().zones, owner_references=(owner,)))
    patch = merge_patch(server, desired, managed_annotations={names.FINGERPRINT_ANNOTATION})
    assert patch["attributes"] is None and patch["topologyPolicies"] is None
    assert patch["metadata"]["annotations"] == {names.FINGERPRINT_ANNOTATION: None}
    assert patch["metadata"]["ownerReferences"] == [
        {"apiVersion": "example.com/v1", "kind": "Rack", "name": "r1", "uid": "r"},
        {"apiVersion": "v1", "kind": "Node", "name": NODE, "uid": "new"},
    ]
    assert "zones" not in patch


def test_labels_and_annotations_set_by_others_survive_our_patches(
    api: FakeApiServer, kube_api_client: Any, publisher: Publisher, sleeps: Sleeps
) -> None:
    from kubernetes import client

    publisher.publish(topology())
    client.CustomObjectsApi(kube_api_client).patch_cluster_custom_object(
        "topology.node.k8s.io", "v1alpha2", PLURAL, NODE,
        {"metadata": {"labels": {"team": "a"}, "annotations": {"note": "hello"}}},
    )  # fmt: skip
    api.clear_requests()
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    # Our cached resourceVersion was stale: the precondition refused the first patch.
    assert nrt_requests(api) == [("patch", 409), ("get", 200), ("patch", 200)]
    assert sleeps == pytest.approx([0.15])
    meta = stored(api)["metadata"]
    assert meta["labels"] == {"team": "a"} and meta["annotations"]["note"] == "hello"
    assert stored(api)["attributes"] == to_nrt(with_pods(topology(), 2))["attributes"]


# -- retries ------------------------------------------------------------------------------------------


def test_conflicts_are_retried_with_backoff_and_jitter(
    api: FakeApiServer, publisher: Publisher, sleeps: Sleeps
) -> None:
    publisher.publish(topology())
    api.faults.conflict_next_writes(2, resource=PLURAL)
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert sleeps == pytest.approx([0.15, 0.3])  # base 0.2 doubling, equal jitter at rng 0.5
    assert api.count("patch", PLURAL, code=409) == 2 and api.changes(PLURAL) == 2


def test_throttling_waits_for_retry_after(api: FakeApiServer, publisher: Publisher, sleeps: Sleeps) -> None:
    publisher.publish(topology())
    api.faults.throttle_next(1, retry_after=7, verb="patch")
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert sleeps == pytest.approx([7.0])


def test_a_server_error_then_success_re_reads_and_patches(
    api: FakeApiServer, publisher: Publisher, sleeps: Sleeps
) -> None:
    publisher.publish(topology())
    api.clear_requests()
    api.faults.fail_next(1, 500, verb="patch")
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert nrt_requests(api) == [("patch", 500), ("get", 200), ("patch", 200)]
    assert len(sleeps) == 1


def test_a_timed_out_patch_is_retried_and_its_late_arrival_is_refused_by_the_precondition(
    api: FakeApiServer, tmp_path: Path, sleeps: Sleeps
) -> None:
    client = load_api_client(str(api.write_kubeconfig(tmp_path / "kc")), qps=0, timeout=0.3)
    publisher = Publisher(client, NODE, sleep=sleeps, rng=lambda: 0.5)
    publisher.publish(topology())
    api.faults.set_latency(1.0, verb="patch")
    sleeps.hook = lambda: api.faults.set_latency(0)
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    wait_until(lambda: api.count("patch", PLURAL, code=409) == 1, what="the delayed patch to be refused")
    assert stored(api)["attributes"] == to_nrt(with_pods(topology(), 2))["attributes"]
    assert api.changes(PLURAL) == 2  # the create and one patch: the late duplicate changed nothing
    client.close()


def test_a_create_whose_answer_was_lost_is_reported_as_created(
    api: FakeApiServer, publisher: Publisher, sleeps: Sleeps
) -> None:
    api.faults.reset_next(1, verb="create")
    assert publisher.publish(topology()) is PublishOutcome.CREATED
    assert nrt_requests(api) == [("get", 404), ("create", 0), ("get", 404), ("create", 201)]


def test_retries_are_bounded_and_end_in_unavailable(
    api: FakeApiServer, api_client: Any, sleeps: Sleeps
) -> None:
    publisher = Publisher(api_client, NODE, retries=2, sleep=sleeps, rng=lambda: 0.0)
    publisher.publish(topology())
    api.faults.fail_next(10, 503, verb="patch")
    with pytest.raises(UnavailableError, match=r"gave up after 3 attempts: 503"):
        publisher.publish(with_pods(topology(), 2))
    assert api.count("patch", PLURAL) == 3
    assert sleeps == pytest.approx([0.1, 0.2])


def test_an_unreachable_apiserver_is_unavailable_not_a_crash(
    api: FakeApiServer, api_client: Any, sleeps: Sleeps
) -> None:
    publisher = Publisher(api_client, NODE, retries=1, sleep=sleeps)
    with api.offline(), pytest.raises(UnavailableError, match="gave up after 2 attempts"):
        publisher.publish(topology())
    assert publisher.publish(topology()) is PublishOutcome.CREATED


def test_an_invalid_object_is_a_publish_error_without_retries(
    api: FakeApiServer, api_client: Any, sleeps: Sleeps
) -> None:
    publisher = Publisher(api_client, "Worker_1", sleep=sleeps)
    with pytest.raises(PublishError, match="422"):
        publisher.publish(topology("Worker_1"))
    assert api.count("create", PLURAL) == 1 and sleeps == []


def test_a_forbidden_patch_is_a_publish_error_and_the_next_publish_re_reads(
    api: FakeApiServer, publisher: Publisher, sleeps: Sleeps
) -> None:
    publisher.publish(topology())
    api.faults.fail_next(1, 403, verb="patch", message="denied by rte-agent-own-node-only")
    with pytest.raises(PublishError, match="403 Forbidden: denied by rte-agent-own-node-only"):
        publisher.publish(with_pods(topology(), 2))
    assert sleeps == []
    api.clear_requests()
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert nrt_requests(api) == [("get", 200), ("patch", 200)]


def test_publishing_another_nodes_topology_is_refused_locally(publisher: Publisher) -> None:
    with pytest.raises(PublishError, match="worker-2"):
        publisher.publish(topology("worker-2"))


# -- CRD, deletion, node identity ---------------------------------------------------------------------


def test_without_the_crd_publishing_is_unavailable_until_it_is_installed(tmp_path: Path) -> None:
    with FakeApiServer(crd_installed=False) as api:
        api.register_node(NODE)
        client = load_api_client(str(api.write_kubeconfig(tmp_path / "kc")), qps=0)
        publisher = Publisher(client, NODE, sleep=lambda s: None)
        assert publisher.crd_ready() is False
        with pytest.raises(UnavailableError, match="is the CRD installed"):
            publisher.publish(topology())
        posts = [r for r in api.requests if r.method == "POST"]
        assert [r.code for r in posts] == [404], "a missing CRD is not retried within one publish"
        api.install_crd()
        assert publisher.crd_ready() is True
        assert publisher.publish(topology()) is PublishOutcome.CREATED
        client.close()


def test_an_nrt_deleted_behind_our_back_is_recreated_on_the_next_change(
    api: FakeApiServer, publisher: Publisher, sleeps: Sleeps
) -> None:
    publisher.publish(topology())
    api.delete_object(PLURAL, NODE)
    api.clear_requests()
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.RECREATED
    assert nrt_requests(api) == [("patch", 404), ("get", 404), ("create", 201)]
    assert sleeps == []
    assert stored(api)["attributes"] == to_nrt(with_pods(topology(), 2))["attributes"]


def test_forget_makes_an_unchanged_publish_notice_a_deleted_nrt(
    api: FakeApiServer, publisher: Publisher
) -> None:
    publisher.publish(topology())
    api.delete_object(PLURAL, NODE)
    assert publisher.publish(topology()) is PublishOutcome.SKIPPED, "nothing changed, nothing asked"
    publisher.forget()
    assert publisher.publish(topology()) is PublishOutcome.RECREATED
    assert api.nrt(NODE) is not None


def test_a_re_registered_node_owns_the_recreated_nrt_with_its_new_uid(
    api: FakeApiServer, publisher: Publisher
) -> None:
    publisher.publish(topology())
    new_uid = api.register_node(NODE)  # the garbage collector deletes the NRT of the old Node
    assert api.nrt(NODE) is None
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.RECREATED
    assert [r["uid"] for r in stored(api)["metadata"]["ownerReferences"]] == [new_uid]
    assert api.count("get", "nodes") == 2


def test_without_its_node_object_the_nrt_is_published_without_an_owner(
    api: FakeApiServer, publisher: Publisher
) -> None:
    api.remove_node(NODE)
    assert publisher.publish(topology()) is PublishOutcome.CREATED
    assert "ownerReferences" not in stored(api)["metadata"]


def test_owner_references_can_be_turned_off(api: FakeApiServer, api_client: Any) -> None:
    publisher = Publisher(api_client, NODE, owner_reference=False)
    assert publisher.publish(topology()) is PublishOutcome.CREATED
    assert "ownerReferences" not in stored(api)["metadata"]
    assert api.count("get", "nodes") == 0


def test_a_forbidden_node_read_publishes_without_owner_until_forget(
    api: FakeApiServer, publisher: Publisher
) -> None:
    api.faults.fail_next(1, 403, verb="get", resource="nodes")
    assert publisher.publish(topology()) is PublishOutcome.CREATED
    assert "ownerReferences" not in stored(api)["metadata"]
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert api.count("get", "nodes") == 1, "a 403 is not asked again on every publish"
    publisher.forget()
    assert publisher.publish(with_pods(topology(), 2)) is PublishOutcome.PATCHED
    assert [r["uid"] for r in stored(api)["metadata"]["ownerReferences"]] == [api.node_uid(NODE)]
