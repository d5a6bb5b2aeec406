import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rte.consumer.store import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    NRTStore,
    heartbeat_from_lease,
    topologies_from_file,
)
from rte.errors import InputError
from rte.model.nrt import to_nrt
from rte.model.topology import NodeTopology, ResourceInfo, Zone


def topo(name: str, cpus: int = 4, *extra: str) -> NodeTopology:
    resources = [ResourceInfo("cpu", cpus, cpus, cpus)] + [ResourceInfo(r, 1, 1, 1) for r in extra]
    return NodeTopology(name=name, zones=(Zone("node-0", resources=tuple(resources)),))


def test_an_nrt_added_after_start_is_served() -> None:
    store = NRTStore()
    store.replace_all([topo("a")])
    assert store.get("b") is None
    assert store.apply(ADDED, topo("b"))
    assert store.get("b") == topo("b")
    assert store.nodes() == ["a", "b"]


def test_modified_and_deleted_events_update_the_node_and_the_generation() -> None:
    store = NRTStore()
    store.apply(ADDED, topo("a", 4))
    g1, r1 = store.generation, store.revision("a")
    assert store.apply(MODIFIED, topo("a", 2))
    assert store.generation > g1 and store.revision("a") > r1
    assert store.get("a") == topo("a", 2)
    assert store.apply(DELETED, topo("a"))
    assert store.get("a") is None and "a" not in store
    assert not store.apply(DELETED, topo("a"))


def test_an_identical_object_is_not_a_change() -> None:
    store = NRTStore()
    store.apply(ADDED, topo("a"))
    generation = store.generation
    assert not store.apply(MODIFIED, topo("a"))
    assert not store.apply(BOOKMARK, topo("a"))
    assert store.generation == generation


def test_resource_names_cover_every_zone_and_follow_updates() -> None:
    store = NRTStore()
    store.apply(ADDED, topo("a", 4, "example.com/nic"))
    assert store.resource_names("a") == {"cpu", "example.com/nic"}
    store.apply(MODIFIED, topo("a", 4))
    assert store.resource_names("a") == {"cpu"}
    assert store.resource_names("nowhere") == frozenset()


def test_a_relist_deletes_nodes_that_vanished() -> None:
    store = NRTStore()
    store.replace_all([topo("a"), topo("b")])
    assert store.replace_all([topo("b"), topo("c")]) == 2
    assert store.nodes() == ["b", "c"]


def test_watch_events_are_read_from_their_wire_form() -> None:
    store = NRTStore()
    store.apply_watch_event({"type": "ADDED", "object": to_nrt(topo("a"))})
    assert store.get("a") == topo("a").canonical()
    with pytest.raises(InputError, match="unknown event type 'ERROR'"):
        store.apply_watch_event({"type": "ERROR", "object": {"kind": "Status"}})
    with pytest.raises(InputError, match="object"):
        store.apply_watch_event({"type": "ADDED", "object": None})


def test_a_watched_nrt_with_a_negative_quantity_is_served_with_zero_there() -> None:
    store = NRTStore()
    obj = to_nrt(topo("a"))
    obj["zones"][0]["resources"][0]["available"] = "-1"
    store.apply_watch_event({"type": "ADDED", "object": obj})
    stored = store.get("a")
    assert stored is not None
    assert stored.zones[0].resources[0] == ResourceInfo("cpu", 4, 4, 0)


def test_heartbeats_never_move_backwards() -> None:
    store = NRTStore()
    store.observe_heartbeat("a", 100.0)
    store.observe_heartbeat("a", 90.0)
    assert store.heartbeat("a") == 100.0
    store.forget_heartbeat("a")
    assert store.heartbeat("a") is None


def test_lease_renew_time_is_read_as_epoch_seconds() -> None:
    spec = {"renewTime": "1970-01-01T00:01:40.500000Z"}
    lease = {"metadata": {"name": "n1", "namespace": "rte"}, "spec": spec}
    assert heartbeat_from_lease(lease) == ("n1", 100.5)
    assert heartbeat_from_lease({"metadata": {"name": "n1"}, "spec": {}}) is None
    with pytest.raises(InputError, match=r"lease: spec.renewTime: not an RFC 3339 time: 'yesterday'"):
        heartbeat_from_lease({"metadata": {"name": "n1"}, "spec": {"renewTime": "yesterday"}})


def test_files_hold_single_objects_lists_and_many_documents(tmp_path: Path) -> None:
    single = tmp_path / "a.json"
    single.write_text(json.dumps(to_nrt(topo("a"))))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"kind": "NodeResourceTopologyList", "items": [to_nrt(topo("b"))]}))
    multi = tmp_path / "multi.yaml"
    multi.write_text(f"{json.dumps(to_nrt(topo('c')))}\n---\n{json.dumps(to_nrt(topo('d')))}\n")
    names = [t.name for p in (single, listed, multi) for t in topologies_from_file(p)]
    assert names == ["a", "b", "c", "d"]


def test_a_bad_file_names_the_file_and_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    obj = to_nrt(topo("a"))
    obj["zones"][0]["resources"][0]["available"] = "12xyz"
    bad.write_text(json.dumps(obj))
    with pytest.raises(InputError, match=r"bad.json: zones\[0\].resources\[0\].available"):
        topologies_from_file(bad)


def test_concurrent_writers_and_readers_keep_the_store_consistent() -> None:
    store = NRTStore()
    errors: list[BaseException] = []

    def writer(prefix: str) -> None:
        try:
            for i in range(300):
                store.apply(ADDED, topo(f"{prefix}{i % 7}", i % 5 + 1))
                if i % 3 == 0:
                    store.apply(DELETED, topo(f"{prefix}{i % 7}"))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def reader() -> None:
        try:
            for _ in range(600):
                for node in store.nodes():
                    t, _rev = store.get_with_revision(node)
                    assert t is None or t.name == node
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(p,)) for p in "xy"] + [threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for node in store.nodes():
        assert store.resource_names(node) == {"cpu"}


def test_the_store_and_caches_import_nothing_from_the_agent_side() -> None:
    code = (
        "import sys\n"
        "import rte.consumer.cache.selection, rte.consumer.store, rte.consumer.load\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('grpc', 'kubernetes')"
        " or m.startswith(('rte.agent', 'rte.host', 'rte.podres'))]\n"
        "print(','.join(sorted(bad)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
