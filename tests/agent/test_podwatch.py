"""The node-scoped pod watch, through the real kubernetes client against the apiserver double."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from rte.agent.watch.podwatch import NodePodWatch
from rte.model.vocabulary import InformerMode
from rte.testing.apiserver import FakeApiServer
from tests.helpers.agent_api import NODE, wait_until

GUARANTEED = [
    {
        "name": "main",
        "image": "pause",
        "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2", "memory": "1Gi"}},
    }
]


class Changes:
    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.count += 1


@pytest.fixture
def changes() -> Changes:
    return Changes()


@pytest.fixture
def watch(api_client: Any, changes: Changes) -> Iterator[NodePodWatch]:
    w = NodePodWatch(api_client, NODE, on_change=changes, backoff_base=0.01, backoff_cap=0.05)
    yield w
    w.stop()


def names(watch: NodePodWatch) -> list[str]:
    return sorted(f"{ns}/{name}" for ns, name in watch.pods())


def wait_for(watch: NodePodWatch, expected: list[str]) -> None:
    wait_until(lambda: names(watch) == expected, what=f"pods {expected} (have {names(watch)})")


def test_it_lists_then_follows_the_pods_of_its_node_only(
    fake_apiserver: FakeApiServer, watch: NodePodWatch, changes: Changes
) -> None:
    fake_apiserver.add_pod("a", node_name=NODE, containers=GUARANTEED)
    fake_apiserver.add_pod("other", node_name="worker-2")
    fake_apiserver.add_pod("pending")  # not bound yet
    assert not watch.synced()
    watch.start()
    assert watch.wait_synced(5)
    assert names(watch) == ["default/a"]
    assert watch.pods()[("default", "a")].is_exclusive(()), "a Guaranteed pod of integral CPUs"
    assert changes.count == 1

    assert fake_apiserver.wait_for_watches(1)
    fake_apiserver.add_pod("b", namespace="team", node_name=NODE)
    fake_apiserver.add_pod("c", node_name="worker-2")
    wait_for(watch, ["default/a", "team/b"])
    fake_apiserver.delete_pod("a")
    wait_for(watch, ["team/b"])
    assert changes.count == 3
    list_queries = [r.query for r in fake_apiserver.requests if r.resource == "pods"]
    assert all(q["fieldSelector"] == f"spec.nodeName={NODE}" for q in list_queries)
    assert list_queries[0]["resourceVersion"] == "0", "the first list is served from the watch cache"


def test_a_status_only_update_does_not_count_as_a_change(
    fake_apiserver: FakeApiServer, kube_api_client: Any, watch: NodePodWatch, changes: Changes
) -> None:
    from kubernetes import client

    fake_apiserver.add_pod("a", node_name=NODE, phase="Pending")
    watch.start()
    assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
    assert not watch.pods()[("default", "a")].counts_for_fingerprint(InformerMode.SHARED)
    core = client.CoreV1Api(kube_api_client)
    core.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"seen": "yes"}}})
    core.patch_namespaced_pod("a", "default", {"status": {"phase": "Running"}})
    wait_until(
        lambda: watch.pods()[("default", "a")].counts_for_fingerprint(InformerMode.SHARED),
        what="the phase change",
    )
    assert changes.count == 2, "the list, then the phase change; the label patch changed no record"


def test_it_survives_a_cleanly_ended_and_a_cut_watch_without_relisting(
    fake_apiserver: FakeApiServer, watch: NodePodWatch
) -> None:
    watch.start()
    assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
    fake_apiserver.drop_watches()
    fake_apiserver.add_pod("a", node_name=NODE)
    wait_for(watch, ["default/a"])
    assert fake_apiserver.wait_for_watches(1)
    fake_apiserver.drop_watches(abrupt=True)
    fake_apiserver.add_pod("b", node_name=NODE)
    wait_for(watch, ["default/a", "default/b"])
    assert watch.relists == 1, "both resumed from the last resourceVersion"


def test_an_expired_watch_lists_again_and_sees_what_happened_meanwhile(
    fake_apiserver: FakeApiServer, watch: NodePodWatch
) -> None:
    fake_apiserver.add_pod("a", node_name=NODE)
    watch.start()
    assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
    fake_apiserver.expire_watches()  # ERROR 410 on the open watch
    wait_until(lambda: watch.relists == 2, what="a relist after 410")
    # Resuming from a compacted resourceVersion after a cut is a 410 too.
    assert fake_apiserver.wait_for_watches(1)
    fake_apiserver.refuse_connections()
    fake_apiserver.delete_pod("a")
    fake_apiserver.add_pod("b", node_name=NODE)
    fake_apiserver.compact()
    fake_apiserver.accept_connections()
    wait_for(watch, ["default/b"])
    assert watch.relists == 3


def test_an_unreachable_apiserver_is_retried_until_it_answers(
    fake_apiserver: FakeApiServer, watch: NodePodWatch
) -> None:
    fake_apiserver.add_pod("a", node_name=NODE)
    with fake_apiserver.offline():
        watch.start()
        wait_until(lambda: watch.failures >= 2, what="failed attempts")
        assert not watch.synced()
    assert watch.wait_synced(5)
    assert names(watch) == ["default/a"]


def test_a_server_error_on_the_list_is_retried(fake_apiserver: FakeApiServer, watch: NodePodWatch) -> None:
    fake_apiserver.faults.fail_next(2, 500, verb="list", resource="pods")
    watch.start()
    assert watch.wait_synced(5)
    assert watch.failures == 2


def test_stop_ends_the_thread_and_closes_the_watch(
    fake_apiserver: FakeApiServer, watch: NodePodWatch
) -> None:
    watch.start()
    assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
    watch.stop()
    wait_until(lambda: fake_apiserver.open_watches == 0, what="the watch to close")
    assert not watch.running


def test_a_failing_callback_does_not_stop_the_watch(fake_apiserver: FakeApiServer, api_client: Any) -> None:
    def explode() -> None:
        raise RuntimeError("callback bug")

    watch = NodePodWatch(api_client, NODE, on_change=explode, backoff_base=0.01)
    try:
        watch.start()
        assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
        fake_apiserver.add_pod("a", node_name=NODE)
        wait_for(watch, ["default/a"])
    finally:
        watch.stop()


def test_a_pod_the_kubelet_refuses_over_alignment_is_reported_once_across_a_relist(
    fake_apiserver: FakeApiServer, kube_api_client: Any, api_client: Any
) -> None:
    from kubernetes import client

    from rte.agent.watch.rejections import Rejection

    rejected: list[Rejection] = []
    watch = NodePodWatch(api_client, NODE, on_rejected=rejected.append, backoff_base=0.01)
    core = client.CoreV1Api(kube_api_client)

    def refuse(name: str, node: str, reason: str) -> None:
        fake_apiserver.add_pod(name, node_name=node, phase="Pending")
        status = {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {reason}"}
        core.patch_namespaced_pod(name, "default", {"status": status})

    try:
        refuse("before-start", NODE, "TopologyAffinityError")  # seconds old: refused during a restart
        watch.start()
        assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
        refuse("elsewhere", "worker-2", "TopologyAffinityError")
        refuse("smt", NODE, "SMTAlignmentError")
        refuse("full", NODE, "OutOfcpu")
        wait_until(lambda: len(rejected) == 2, what="two rejections")
        fake_apiserver.expire_watches()
        wait_until(lambda: watch.relists == 2, what="a relist after 410")
        core.patch_namespaced_pod("smt", "default", {"metadata": {"labels": {"seen": "again"}}})
        fake_apiserver.add_pod("marker", node_name=NODE)
        wait_for(watch, ["default/before-start", "default/full", "default/marker", "default/smt"])
    finally:
        watch.stop()
    assert [(r.pod, r.reason) for r in rejected] == [
        ("default/before-start", "TopologyAffinityError"),
        ("default/smt", "SMTAlignmentError"),
    ]


# -- as the node itself (#26.5: no right to read pods for the agent's token) ----------------------


@pytest.fixture
def as_node_watch(api_client: Any) -> Iterator[NodePodWatch]:
    w = NodePodWatch(api_client, NODE, backoff_base=0.01, backoff_cap=0.05, as_node=True)
    yield w
    w.stop()


def test_as_the_node_it_lists_and_watches_the_pods_the_node_authorizer_allows(
    fake_apiserver: FakeApiServer, as_node_watch: NodePodWatch
) -> None:
    """The double refuses an impersonated request unless it acts as system:node:<NODE> in group
    system:nodes with fieldSelector spec.nodeName=<NODE> (rte/testing/apiserver/impersonation.py):
    the watch syncing and following changes shows every list and watch carried exactly that."""
    fake_apiserver.node_impersonation = True
    fake_apiserver.add_pod("a", node_name=NODE, containers=GUARANTEED)
    fake_apiserver.add_pod("other", node_name="worker-2")
    as_node_watch.start()
    assert as_node_watch.wait_synced(5)
    wait_for(as_node_watch, ["default/a"])
    assert fake_apiserver.wait_for_watches(1)
    fake_apiserver.add_pod("b", node_name=NODE)
    wait_for(as_node_watch, ["default/a", "default/b"])
    assert fake_apiserver.count(resource="pods", code=403) == 0


def test_as_the_node_on_a_cluster_without_constrained_impersonation_it_fails_and_retries(
    fake_apiserver: FakeApiServer, as_node_watch: NodePodWatch
) -> None:
    """Impersonation refused (403): no pods, not synced, retried with backoff, never a crash."""
    fake_apiserver.add_pod("a", node_name=NODE)
    as_node_watch.start()
    wait_until(lambda: as_node_watch.failures >= 2, what="two refused lists")
    assert not as_node_watch.synced() and as_node_watch.pods() == {}
    assert fake_apiserver.count(resource="pods", code=403) >= 2


def test_the_double_refuses_another_nodes_pods_and_other_identities(api_client: Any) -> None:
    from kubernetes.client.exceptions import ApiException

    from rte.agent.watch.podwatch import node_identity_headers
    from rte.runtime.kubeclient import raw_get

    with FakeApiServer(node_impersonation=True) as server:
        client = server.api_client()
        try:
            mine = [("fieldSelector", f"spec.nodeName={NODE}")]
            raw_get(client, "/api/v1/pods", mine, headers=node_identity_headers(NODE)).read()
            refused = [
                ("/api/v1/pods", [("fieldSelector", "spec.nodeName=worker-2")], node_identity_headers(NODE)),
                ("/api/v1/pods", [], node_identity_headers(NODE)),
                ("/api/v1/pods", mine, {"Impersonate-User": f"system:node:{NODE}"}),
                (
                    "/api/v1/pods",
                    mine,
                    {"Impersonate-User": "system:admin", "Impersonate-Group": "system:nodes"},
                ),
            ]
            for path, query, headers in refused:
                with pytest.raises(ApiException) as e:
                    raw_get(client, path, query, headers=headers)
                assert e.value.status == 403, (query, headers)
        finally:
            client.close()


def test_a_list_of_several_pages_is_read_down_to_pods_as_each_page_arrives(
    fake_apiserver: FakeApiServer, kube_api_client: Any, api_client: Any
) -> None:
    """The list is not held whole as decoded JSON until its end: what reaches the list handler
    is each pod already read (docs/performance.md, "Agent memory"); pods and refusals on later
    pages are all still seen."""
    from kubernetes import client

    from rte.agent.watch.rejections import Rejection

    for i in range(5):
        fake_apiserver.add_pod(f"p{i}", node_name=NODE)
    fake_apiserver.add_pod("refused", node_name=NODE, phase="Pending")
    status = {"phase": "Failed", "reason": "TopologyAffinityError", "message": "rejected"}
    client.CoreV1Api(kube_api_client).patch_namespaced_pod("refused", "default", {"status": status})
    rejected: list[Rejection] = []
    watch = NodePodWatch(api_client, NODE, on_rejected=rejected.append, backoff_base=0.01)
    reflector = watch._reflector
    reflector.page_size = 2
    handed: list[Any] = []
    on_list = reflector._on_list

    def spy(items: list[Any]) -> None:
        handed.extend(items)
        on_list(items)

    reflector._on_list = spy
    try:
        watch.start()
        assert watch.wait_synced(5)
    finally:
        watch.stop()
    assert names(watch) == [f"default/p{i}" for i in range(5)] + ["default/refused"]
    assert [r.pod for r in rejected] == ["default/refused"]
    assert len(handed) == 6 and not any(isinstance(item, dict) for item in handed)


def test_a_snapshot_handed_out_is_never_changed_by_later_events(
    fake_apiserver: FakeApiServer, watch: NodePodWatch
) -> None:
    """The loop keeps the watch's own mapping for a cycle (no copy per cycle): events must make
    a new one, or a cycle would see pods come and go under it."""
    fake_apiserver.add_pod("a", node_name=NODE)
    watch.start()
    assert watch.wait_synced(5) and fake_apiserver.wait_for_watches(1)
    before = watch.pods()
    assert watch.pods() is before, "no copy while nothing changed"
    fake_apiserver.add_pod("b", node_name=NODE)
    wait_for(watch, ["default/a", "default/b"])
    fake_apiserver.delete_pod("a")
    wait_for(watch, ["default/b"])
    assert sorted(before) == [("default", "a")]
