"""The cluster reader against the apiserver double: what it reads, and how each failure reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rte.cluster import reader as reader_module
from rte.cluster.reader import PER_NODE_LIMIT, ClusterReader
from rte.errors import ConfigError, InputError, RteError, UnavailableError
from rte.testing.apiserver import FakeApiServer
from rte.testing.views_cluster import GI, lease, node, nrt, pod

ZONE = {"cpu": (8, 8), "memory": (16 * GI, 16 * GI)}


def add_nodes(api: FakeApiServer, count: int) -> list[str]:
    names = [f"n{i:02d}" for i in range(count)]
    for name in names:
        api.create_object(
            "nodes", node(name, {"cpu": 8}, {"pool": "even" if int(name[1:]) % 2 == 0 else "odd"})
        )
        api.create_object(api.nrt_resource.plural, nrt(name, [ZONE]))
        api.create_object("pods", pod(f"p-{name}", {"cpu": 1, "memory": GI}, node_name=name))
    return names


def test_a_few_nodes_are_read_by_name_and_many_by_one_list_per_collection(
    fake_apiserver: FakeApiServer, reader: ClusterReader
) -> None:
    names = add_nodes(fake_apiserver, PER_NODE_LIMIT + 5)
    few = names[:3]
    fake_apiserver.clear_requests()
    assert [o["metadata"]["name"] for o in reader.nrts(few)] == few
    assert {n: [p["metadata"]["name"] for p in ps] for n, ps in reader.pods_on(few).items()} == {
        n: [f"p-{n}"] for n in few
    }
    assert fake_apiserver.count("get", "noderesourcetopologies") == 3
    assert fake_apiserver.count("list", "pods") == 3  # one per node, by spec.nodeName
    fake_apiserver.clear_requests()
    many = names[: PER_NODE_LIMIT + 1]
    assert [o["metadata"]["name"] for o in reader.nrts(many)] == many
    assert sorted(reader.pods_on(many)) == many
    assert fake_apiserver.count("list", "noderesourcetopologies") == 1
    assert fake_apiserver.count("list", "pods") == 1
    assert fake_apiserver.count("get") == 0


def test_lists_follow_continue_tokens_and_label_selectors(
    fake_apiserver: FakeApiServer, reader: ClusterReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = add_nodes(fake_apiserver, 7)
    monkeypatch.setattr(reader_module, "PAGE_SIZE", 2)
    fake_apiserver.clear_requests()
    assert [o["metadata"]["name"] for o in reader.nodes()] == names
    assert fake_apiserver.count("list", "nodes") == 4
    assert [o["metadata"]["name"] for o in reader.nodes(selector="pool=odd")] == names[1::2]


def test_leases_of_a_namespace_that_does_not_exist_are_none(
    fake_apiserver: FakeApiServer, reader: ClusterReader
) -> None:
    fake_apiserver.create_object("leases", lease("n00", datetime.now(UTC)))
    assert [o["metadata"]["name"] for o in reader.leases("rte")] == ["n00"]
    assert reader.leases("rte", ["n00", "n01"])[0]["spec"]["leaseDurationSeconds"] == 40
    assert reader.leases("elsewhere") == []


def test_a_missing_crd_is_one_config_error_naming_it_whether_listing_or_reading_by_name(
    fake_apiserver: FakeApiServer, reader: ClusterReader
) -> None:
    fake_apiserver.uninstall_crd()
    expected = (
        f"noderesourcetopologies.topology.node.k8s.io: the apiserver at {fake_apiserver.url} does not serve"
        " topology.node.k8s.io/v1alpha2 noderesourcetopologies: the CRD is not installed"
        " (kubectl apply -f deploy/crd-noderesourcetopologies.yaml)"
    )
    for names in (None, ["a"]):
        with pytest.raises(ConfigError) as caught:
            reader.nrts(names)
        assert str(caught.value) == expected
    fake_apiserver.install_crd()
    assert reader.nrts(["a"]) == []  # with the CRD, a missing name is simply not there


def test_forbidden_names_the_verb_and_the_resource(
    fake_apiserver: FakeApiServer, reader: ClusterReader
) -> None:
    message = (
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope'
    )
    fake_apiserver.faults.fail_next(1, 403, message=message, reason="Forbidden", resource="nodes")
    with pytest.raises(RteError) as caught:
        reader.nodes()
    assert type(caught.value) is RteError
    assert str(caught.value) == f"forbidden: cannot list nodes (RBAC): {message}"
    fake_apiserver.faults.fail_next(1, 403, message="no", reason="Forbidden", resource="pods")
    with pytest.raises(RteError, match=r"^forbidden: cannot get pods p in namespace ns \(RBAC\): no$"):
        reader.pod("ns", "p")


def test_an_unreachable_apiserver_is_one_unavailable_error(fake_apiserver: FakeApiServer) -> None:
    r = ClusterReader(fake_apiserver.api_client())
    fake_apiserver.stop()
    with pytest.raises(UnavailableError) as caught:
        r.nodes()
    assert str(caught.value) == f"cannot reach the apiserver at {fake_apiserver.url}: Connection refused"
    r.close()


def test_a_pod_that_does_not_exist_is_an_input_error(
    reader: ClusterReader, fake_apiserver: FakeApiServer
) -> None:
    with pytest.raises(InputError, match=rf"^pod ns/p: not found at {fake_apiserver.url}$"):
        reader.pod("ns", "p")


def test_a_watch_cache_read_sends_its_resource_version_with_the_first_page_only(
    fake_apiserver: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = add_nodes(fake_apiserver, 5)
    monkeypatch.setattr(reader_module, "PAGE_SIZE", 2)
    cached = ClusterReader(fake_apiserver.api_client(), list_resource_version="0")
    fake_apiserver.clear_requests()
    assert [o["metadata"]["name"] for o in cached.nodes()] == names
    pages = [r.query for r in fake_apiserver.requests if r.verb == "list"]
    assert [("resourceVersion" in q, "continue" in q) for q in pages] == [
        (True, False),
        (False, True),
        (False, True),
    ]
    assert pages[0]["resourceVersion"] == "0"
    cached.close()
