"""The apiserver double, exercised only through the real ``kubernetes`` client over HTTP."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from rte.testing.apiserver import FakeApiServer
from tests.helpers.paths import REPO

GROUP = "topology.node.k8s.io"
PLURAL = "noderesourcetopologies"
V2 = "v1alpha2"
V1 = "v1alpha1"


def example_nrt(name: str = "worker-1", version: str = V2) -> dict[str, Any]:
    """A two-zone NRT as an agent writes it (the CRD of deploy/crd-noderesourcetopologies.yaml)."""
    fingerprint = "pfp0v0012fa3d4b5c6e7f809"
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "NodeResourceTopology",
        "metadata": {"name": name, "annotations": {"topology.node.k8s.io/fingerprint": fingerprint}},
        "topologyPolicies": ["SingleNUMANodeContainerLevel"],
        "attributes": [
            {"name": "nodeTopologyPodsFingerprint", "value": fingerprint},
            {"name": "nodeTopologyPodsFingerprintMethod", "value": "with-exclusive-resources"},
            {"name": "topologyManagerPolicy", "value": "single-numa-node"},
            {"name": "topologyManagerScope", "value": "container"},
        ],
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 10}, {"name": "node-1", "value": 21}],
                "resources": [
                    {"name": "cpu", "capacity": "40", "allocatable": "38", "available": "38"},
                    {
                        "name": "hugepages-2Mi",
                        "capacity": "268435456",
                        "allocatable": "268435456",
                        "available": "268435456",
                    },
                    {
                        "name": "memory",
                        "capacity": "99857395712",
                        "allocatable": "98703962112",
                        "available": "98703962112",
                    },
                ],
            },
            {
                "name": "node-1",
                "type": "Node",
                "costs": [{"name": "node-0", "value": 21}, {"name": "node-1", "value": 10}],
                "resources": [
                    {"name": "cpu", "capacity": "40", "allocatable": "40", "available": "32"},
                    {"name": "hugepages-2Mi", "capacity": "0", "allocatable": "0", "available": "0"},
                    {
                        "name": "memory",
                        "capacity": "101386649600",
                        "allocatable": "101386649600",
                        "available": "97091682304",
                    },
                    {"name": "vendor.com/nic", "capacity": "32", "allocatable": "32", "available": "30"},
                ],
            },
        ],
    }


@pytest.fixture
def api(fake_apiserver: FakeApiServer) -> FakeApiServer:
    return fake_apiserver


def create(objects: Any, body: dict[str, Any], version: str = V2, **kwargs: Any) -> dict[str, Any]:
    result: dict[str, Any] = objects.create_cluster_custom_object(GROUP, version, PLURAL, body, **kwargs)
    return result


def status_of(err: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(err.body)
    return body


class Collector:
    """Runs a real ``kubernetes.watch.Watch`` in a thread and keeps what it yields."""

    def __init__(self, func: Any, *args: Any, stop_after: int | None = None, **kwargs: Any) -> None:
        self.watch = watch.Watch()
        self.events: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self._stop_after = stop_after
        self._thread = threading.Thread(target=self._run, args=(func, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, func: Any, args: Any, kwargs: Any) -> None:
        try:
            for event in self.watch.stream(func, *args, **kwargs):
                self.events.append(event)
                if self._stop_after is not None and len(self.events) >= self._stop_after:
                    self.watch.stop()
        except BaseException as e:  # the test asserts on it
            self.error = e

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the watch did not end"

    @property
    def kinds(self) -> list[str]:
        return [e["type"] for e in self.events]


# -- NodeResourceTopology CRUD ---------------------------------------------------------------------


def test_an_nrt_goes_through_create_get_replace_patch_and_delete(api: FakeApiServer, objects: Any) -> None:
    created = create(objects, example_nrt())
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) == api.resource_version

    got = objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert got == created

    changed = copy.deepcopy(got)
    changed["zones"][1]["resources"][0]["available"] = "30"
    replaced = objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", changed)
    assert int(replaced["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    assert replaced["metadata"]["generation"] == 2
    assert replaced["metadata"]["uid"] == meta["uid"]

    patched = objects.patch_cluster_custom_object(
        GROUP,
        V2,
        PLURAL,
        "worker-1",
        {"metadata": {"annotations": {"k8stopoawareschedwg/rte-update": "periodic"}}},
    )
    assert patched["metadata"]["annotations"]["k8stopoawareschedwg/rte-update"] == "periodic"
    assert patched["metadata"]["generation"] == 2, "a metadata-only change keeps the generation"

    deleted = objects.delete_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert deleted["metadata"]["name"] == "worker-1"
    with pytest.raises(ApiException) as err:
        objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert status_of(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'noderesourcetopologies.topology.node.k8s.io "worker-1" not found',
        "reason": "NotFound",
        "details": {"name": "worker-1", "group": GROUP, "kind": PLURAL},
        "code": 404,
    }


def test_reading_through_v1alpha1_only_rewrites_the_api_version(api: FakeApiServer, objects: Any) -> None:
    created = create(objects, example_nrt())
    old = objects.get_cluster_custom_object(GROUP, V1, PLURAL, "worker-1")
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    assert {**old, "apiVersion": created["apiVersion"]} == created
    listed = objects.list_cluster_custom_object(GROUP, V1, PLURAL)
    assert listed["kind"] == "NodeResourceTopologyList"
    assert [i["apiVersion"] for i in listed["items"]] == [f"{GROUP}/v1alpha1"]
    stored = api.nrt("worker-1")
    assert stored is not None and stored["apiVersion"] == f"{GROUP}/v1alpha2"


def test_writes_through_v1alpha1_are_validated_with_the_v1alpha1_schema(objects: Any) -> None:
    body = example_nrt(version=V1)
    del body["topologyPolicies"]
    with pytest.raises(ApiException) as err:
        create(objects, body, version=V1)
    assert err.value.status == 422
    assert [c["field"] for c in status_of(err.value)["details"]["causes"]] == ["topologyPolicies"]
    # The same body is fine for v1alpha2, where topologyPolicies is optional.
    create(objects, {**body, "apiVersion": f"{GROUP}/{V2}"})


def test_creating_an_existing_nrt_is_409_already_exists(objects: Any) -> None:
    create(objects, example_nrt())
    with pytest.raises(ApiException) as err:
        create(objects, example_nrt())
    assert err.value.status == 409
    assert status_of(err.value)["reason"] == "AlreadyExists"


def test_replacing_with_a_stale_resource_version_is_409_conflict(objects: Any) -> None:
    first = create(objects, example_nrt())
    newer = copy.deepcopy(first)
    newer["zones"][0]["resources"][0]["available"] = "37"
    objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", newer)
    stale = copy.deepcopy(first)
    stale["zones"][0]["resources"][0]["available"] = "36"
    with pytest.raises(ApiException) as err:
        objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", stale)
    assert err.value.status == 409
    body = status_of(err.value)
    assert body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]
    # Without a resourceVersion the update is unconditional, as for any custom resource.
    del stale["metadata"]["resourceVersion"]
    objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", stale)


def test_a_zone_without_type_and_a_bad_quantity_are_422_naming_each_field(objects: Any) -> None:
    body = example_nrt()
    del body["zones"][0]["type"]
    body["zones"][1]["resources"][0]["capacity"] = "12xyz"
    with pytest.raises(ApiException) as err:
        create(objects, body)
    status = status_of(err.value)
    assert (status["code"], status["reason"], status["kind"]) == (422, "Invalid", "Status")
    causes = {c["field"]: c for c in status["details"]["causes"]}
    assert set(causes) == {"zones[0].type", "zones[1].resources[0].capacity"}
    assert causes["zones[0].type"]["reason"] == "FieldValueRequired"
    assert causes["zones[1].resources[0].capacity"]["reason"] == "FieldValueInvalid"
    assert '"12xyz"' in causes["zones[1].resources[0].capacity"]["message"]
    assert status["message"].startswith('NodeResourceTopology.topology.node.k8s.io "worker-1" is invalid: ')


def test_quantities_may_be_json_integers_or_suffixed_strings(objects: Any) -> None:
    body = example_nrt()
    resources = body["zones"][0]["resources"]
    resources[0].update(capacity=40, allocatable="38500m", available="1e3")
    resources[2].update(capacity="96Gi", allocatable="90G", available="+.5")
    created = create(objects, body)
    # Stored as sent: the apiserver does not canonicalise quantities.
    assert created["zones"][0]["resources"][0]["capacity"] == 40
    assert created["zones"][0]["resources"][2]["available"] == "+.5"


def test_a_non_integer_cost_and_an_out_of_range_one_are_invalid(objects: Any) -> None:
    body = example_nrt()
    body["zones"][0]["costs"][0]["value"] = "10"
    body["zones"][1]["costs"][0]["value"] = 2**63
    with pytest.raises(ApiException) as err:
        create(objects, body)
    fields = sorted(c["field"] for c in status_of(err.value)["details"]["causes"])
    assert fields == ["zones[0].costs[0].value", "zones[1].costs[0].value"]


def test_unknown_fields_are_pruned_with_a_warning_or_refused_when_strict(objects: Any) -> None:
    body = example_nrt()
    body["zones"][0]["numaId"] = 0
    body["bogus"] = True
    data, code, headers = objects.create_cluster_custom_object_with_http_info(GROUP, V2, PLURAL, body)
    assert code == 201 and "bogus" not in data
    # urllib3 folds repeated Warning headers into one, comma-separated.
    warning = headers.get("Warning", "")
    assert '299 - "unknown field \\"bogus\\""' in warning
    assert '299 - "unknown field \\"zones[0].numaId\\""' in warning
    stored = objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert "numaId" not in stored["zones"][0] and "bogus" not in stored
    with pytest.raises(ApiException) as err:
        create(objects, {**body, "metadata": {"name": "worker-2"}}, field_validation="Strict")
    assert err.value.status == 400
    assert "strict decoding error" in status_of(err.value)["message"]


def test_creating_with_a_resource_version_is_refused_like_the_storage_layer_does(objects: Any) -> None:
    created = create(objects, example_nrt())
    objects.delete_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    with pytest.raises(ApiException) as err:
        create(objects, created)  # a re-create from a cached copy still carries its resourceVersion
    assert err.value.status == 500
    assert status_of(err.value)["message"] == "resourceVersion should not be set on objects to be created"


def test_a_body_without_api_version_or_with_a_mismatched_name_is_400(objects: Any) -> None:
    body = example_nrt()
    del body["apiVersion"]
    with pytest.raises(ApiException) as err:
        create(objects, body)
    assert err.value.status == 400
    created = create(objects, example_nrt())
    with pytest.raises(ApiException) as err:
        objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-2", created)
    assert err.value.status == 400
    assert "does not match the name on the URL" in status_of(err.value)["message"]


# -- no-op writes and watches ---------------------------------------------------------------------


def test_an_identical_update_keeps_the_resource_version_and_emits_no_watch_event(
    api: FakeApiServer, objects: Any
) -> None:
    created = create(objects, example_nrt())
    rv = created["metadata"]["resourceVersion"]
    seen = Collector(
        objects.list_cluster_custom_object,
        GROUP,
        V2,
        PLURAL,
        resource_version=rv,
        timeout_seconds=5,
        stop_after=1,
    )
    assert api.wait_for_watches(1)

    same = objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", copy.deepcopy(created))
    again = objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"zones": created["zones"]})
    assert same["metadata"]["resourceVersion"] == again["metadata"]["resourceVersion"] == rv
    assert same == created
    assert api.resource_version == int(rv)
    assert api.count("update", PLURAL, code=200, changed=False) == 1
    assert api.changes(PLURAL) == 1  # only the create

    # A real change is the first thing the watch sees: the no-ops emitted nothing before it.
    real = objects.patch_cluster_custom_object(
        GROUP, V2, PLURAL, "worker-1", {"metadata": {"labels": {"a": "b"}}}
    )
    seen.join()
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in seen.events] == [
        ("MODIFIED", real["metadata"]["resourceVersion"])
    ]


def test_a_watch_from_a_list_resource_version_sees_added_modified_and_deleted(objects: Any) -> None:
    listed = objects.list_cluster_custom_object(GROUP, V2, PLURAL)
    create(objects, example_nrt())
    objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"metadata": {"labels": {"a": "b"}}})
    objects.delete_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")

    w = watch.Watch()
    events = []
    for event in w.stream(
        objects.list_cluster_custom_object,
        GROUP,
        V2,
        PLURAL,
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=5,
    ):
        events.append(event)
        if len(events) == 3:
            w.stop()
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_a_watch_without_resource_version_starts_with_the_current_state_and_honours_field_selectors(
    api: FakeApiServer, objects: Any
) -> None:
    create(objects, example_nrt("worker-1"))
    create(objects, example_nrt("worker-2"))
    seen = Collector(
        objects.list_cluster_custom_object,
        GROUP,
        V2,
        PLURAL,
        field_selector="metadata.name=worker-2",
        timeout_seconds=5,
        stop_after=2,
    )
    assert api.wait_for_watches(1)
    objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"metadata": {"labels": {"x": "1"}}})
    objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-2", {"metadata": {"labels": {"x": "2"}}})
    seen.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in seen.events] == [
        ("ADDED", "worker-2"),
        ("MODIFIED", "worker-2"),
    ]


def test_resuming_a_watch_from_a_compacted_resource_version_is_410_expired(
    api: FakeApiServer, objects: Any
) -> None:
    old_rv = create(objects, example_nrt())["metadata"]["resourceVersion"]
    objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"metadata": {"labels": {"a": "b"}}})
    api.compact()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            objects.list_cluster_custom_object, GROUP, V2, PLURAL, resource_version=old_rv, timeout_seconds=2
        ):
            pass
    assert err.value.status == 410
    assert "too old resource version" in str(err.value.reason)


def test_an_open_watch_told_its_history_expired_gets_an_error_event(api: FakeApiServer, objects: Any) -> None:
    seen = Collector(objects.list_cluster_custom_object, GROUP, V2, PLURAL, timeout_seconds=5)
    assert api.wait_for_watches(1)
    assert api.expire_watches() == 1
    seen.join()
    assert isinstance(seen.error, ApiException) and seen.error.status == 410


def test_bookmarks_carry_the_current_resource_version(api: FakeApiServer, objects: Any) -> None:
    create(objects, example_nrt())
    seen = Collector(
        objects.list_cluster_custom_object,
        GROUP,
        V2,
        PLURAL,
        allow_watch_bookmarks=True,
        timeout_seconds=5,
        stop_after=2,
    )
    assert api.wait_for_watches(1)
    api.send_bookmarks()
    seen.join()
    assert seen.kinds == ["ADDED", "BOOKMARK"]
    assert seen.events[1]["raw_object"]["metadata"]["resourceVersion"] == str(api.resource_version)


def test_label_selectors_filter_lists(objects: Any) -> None:
    for name, pool in (("worker-1", "gpu"), ("worker-2", "cpu"), ("worker-3", None)):
        body = example_nrt(name)
        if pool:
            body["metadata"]["labels"] = {"pool": pool}
        create(objects, body)

    def names(selector: str) -> list[str]:
        listed = objects.list_cluster_custom_object(GROUP, V2, PLURAL, label_selector=selector)
        return [i["metadata"]["name"] for i in listed["items"]]

    assert names("pool=gpu") == ["worker-1"]
    assert names("pool!=gpu") == ["worker-2", "worker-3"]
    assert names("pool in (cpu,gpu)") == ["worker-1", "worker-2"]
    assert names("!pool") == ["worker-3"]


def test_delete_preconditions_and_dry_run_leave_the_object_alone(api: FakeApiServer, objects: Any) -> None:
    created = create(objects, example_nrt())
    rv = api.resource_version
    with pytest.raises(ApiException) as err:
        objects.delete_cluster_custom_object(
            GROUP,
            V2,
            PLURAL,
            "worker-1",
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="x")),
        )
    assert err.value.status == 409
    objects.delete_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", dry_run="All")
    body = copy.deepcopy(created)
    body["zones"] = []
    objects.replace_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", body, dry_run="All")
    assert api.resource_version == rv
    assert api.nrt("worker-1") == created


def test_a_bookmark_interval_sends_bookmarks_on_quiet_watches() -> None:
    with FakeApiServer(bookmark_interval=0.1) as api, api.api_client() as api_client:
        objects = client.CustomObjectsApi(api_client)
        seen = Collector(
            objects.list_cluster_custom_object, GROUP, V2, PLURAL,
            allow_watch_bookmarks=True, timeout_seconds=5, stop_after=2,
        )  # fmt: skip
        seen.join()
        assert seen.kinds == ["BOOKMARK", "BOOKMARK"]


# -- patch flavours ---------------------------------------------------------------------------------


def test_json_patch_applies_operations_and_a_failed_test_is_422(objects: Any) -> None:
    create(objects, example_nrt())
    patched = objects.patch_cluster_custom_object(
        GROUP,
        V2,
        PLURAL,
        "worker-1",
        [
            {"op": "test", "path": "/zones/0/name", "value": "node-0"},
            {"op": "replace", "path": "/zones/0/resources/0/available", "value": "30"},
            {"op": "remove", "path": "/topologyPolicies"},
        ],
        _content_type="application/json-patch+json",
    )
    assert patched["zones"][0]["resources"][0]["available"] == "30"
    assert "topologyPolicies" not in patched
    with pytest.raises(ApiException) as err:
        objects.patch_cluster_custom_object(
            GROUP,
            V2,
            PLURAL,
            "worker-1",
            [{"op": "test", "path": "/zones/0/name", "value": "node-9"}],
            _content_type="application/json-patch+json",
        )
    assert err.value.status == 422


def test_a_merge_patch_is_validated_and_can_delete_fields_with_null(objects: Any) -> None:
    create(objects, example_nrt())
    patched = objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"topologyPolicies": None})
    assert "topologyPolicies" not in patched
    with pytest.raises(ApiException) as err:
        objects.patch_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", {"zones": None})
    assert err.value.status == 422
    assert [c["field"] for c in status_of(err.value)["details"]["causes"]] == ["zones"]


def test_strategic_merge_patch_on_a_custom_resource_is_415(objects: Any) -> None:
    create(objects, example_nrt())
    with pytest.raises(ApiException) as err:
        objects.patch_cluster_custom_object(
            GROUP,
            V2,
            PLURAL,
            "worker-1",
            {"zones": []},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415
    assert status_of(err.value)["reason"] == "UnsupportedMediaType"


def apply(objects: Any, body: dict[str, Any], manager: str | None, **kwargs: Any) -> Any:
    extra = {"field_manager": manager} if manager else {}
    return objects.patch_cluster_custom_object(
        GROUP,
        V2,
        PLURAL,
        body["metadata"]["name"],
        body,
        _content_type="application/apply-patch+yaml",
        **extra,
        **kwargs,
    )


def test_server_side_apply_creates_updates_and_owns_fields_per_manager(
    api: FakeApiServer, objects: Any
) -> None:
    with pytest.raises(ApiException) as err:
        apply(objects, example_nrt(), manager=None)
    assert err.value.status == 400

    # Creating through apply answers 201, which this client's patch method does not deserialise.
    assert apply(objects, example_nrt(), "rte-agent") is None
    assert api.requests[-1].code == 201
    created = objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    managers = {(m["manager"], m["operation"]) for m in created["metadata"]["managedFields"]}
    assert managers == {("rte-agent", "Apply")}
    assert "f:zones" in created["metadata"]["managedFields"][0]["fieldsV1"]

    rv = created["metadata"]["resourceVersion"]
    assert apply(objects, example_nrt(), "rte-agent")["metadata"]["resourceVersion"] == rv, "no-op apply"

    # Dropping a field from the configuration removes it, since only this manager set it.
    without = example_nrt()
    del without["topologyPolicies"]
    assert "topologyPolicies" not in apply(objects, without, "rte-agent")

    # Another manager's different value conflicts unless forced.
    other = example_nrt()
    other["attributes"] = other["attributes"][:1]
    with pytest.raises(ApiException) as err:
        apply(objects, other, "someone-else")
    assert err.value.status == 409
    assert status_of(err.value)["details"]["causes"][0]["field"] == ".attributes"
    forced = apply(objects, other, "someone-else", force=True)
    assert forced["attributes"] == other["attributes"]


def test_apply_validates_the_merged_object(objects: Any) -> None:
    body = example_nrt()
    body["zones"][0]["resources"][0]["capacity"] = "lots"
    with pytest.raises(ApiException) as err:
        apply(objects, body, "rte-agent")
    assert err.value.status == 422


# -- faults ----------------------------------------------------------------------------------------


def test_refused_connections_fail_the_client_and_the_server_comes_back_on_the_same_port(
    api: FakeApiServer, objects: Any
) -> None:
    create(objects, example_nrt())
    port = api.port
    with api.offline():
        assert not api.listening
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1", _request_timeout=2)
    assert api.port == port
    assert objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")["metadata"]["name"] == "worker-1"


def test_latency_delays_only_matching_requests(api: FakeApiServer, objects: Any) -> None:
    create(objects, example_nrt())
    api.faults.set_latency(0.3, verb="get")
    started = time.monotonic()
    objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    objects.list_cluster_custom_object(GROUP, V2, PLURAL)
    assert time.monotonic() - started < 0.3
    api.faults.set_latency(0)


def test_the_next_writes_can_be_made_to_conflict(api: FakeApiServer, objects: Any) -> None:
    api.faults.conflict_next_writes(2, resource=PLURAL)
    for _ in range(2):
        with pytest.raises(ApiException) as err:
            create(objects, example_nrt())
        assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"
    objects.list_cluster_custom_object(GROUP, V2, PLURAL)  # reads are not affected
    assert api.faults.pending == 0
    create(objects, example_nrt())
    assert api.nrt("worker-1") is not None


def test_the_next_matching_requests_fail_with_the_given_code(api: FakeApiServer, objects: Any) -> None:
    create(objects, example_nrt())
    api.faults.fail_next(1, 503, verb="get", resource=PLURAL)
    api.faults.fail_next(1, 500, method="PATCH", path=r"/noderesourcetopologies/worker-1$")
    with pytest.raises(ApiException) as err:
        objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    assert (err.value.status, status_of(err.value)["reason"]) == (503, "ServiceUnavailable")
    with pytest.raises(ApiException) as err:
        objects.patch_cluster_custom_object(
            GROUP, V2, PLURAL, "worker-1", {"metadata": {"labels": {"a": "b"}}}
        )
    assert (err.value.status, status_of(err.value)["reason"]) == (500, "InternalError")
    assert objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")["metadata"].get("labels") is None
    assert api.count(code=503) == 1 and api.count(code=500) == 1


def test_throttling_answers_429_with_retry_after(api: FakeApiServer, objects: Any) -> None:
    api.faults.throttle_next(1, retry_after=7, verb="create")
    with pytest.raises(ApiException) as err:
        create(objects, example_nrt())
    assert err.value.status == 429
    assert err.value.headers["Retry-After"] == "7"
    assert status_of(err.value)["details"] == {"retryAfterSeconds": 7}
    create(objects, example_nrt())


def test_the_client_retries_a_throttled_read_by_itself_after_retry_after(
    api: FakeApiServer, objects: Any
) -> None:
    # urllib3 (under the kubernetes client) retries idempotent requests answered 429/503 with a
    # Retry-After header, sleeping that long: callers never see the first 429 of a GET.
    api.faults.throttle_next(1, retry_after=0, verb="list")
    objects.list_cluster_custom_object(GROUP, V2, PLURAL)
    assert [r.code for r in api.requests if r.verb == "list"] == [429, 200]


def test_a_reset_connection_fails_a_create_without_storing_it(api: FakeApiServer, objects: Any) -> None:
    api.faults.reset_next(1, verb="create")
    with pytest.raises(urllib3.exceptions.HTTPError):
        create(objects, example_nrt())
    assert api.nrt("worker-1") is None
    assert api.requests[-1].code == 0 and api.requests[-1].injected


def test_dropping_watches_ends_streams_cleanly_or_cuts_them(api: FakeApiServer, objects: Any) -> None:
    clean = Collector(objects.list_cluster_custom_object, GROUP, V2, PLURAL, timeout_seconds=30)
    assert api.wait_for_watches(1)
    assert api.drop_watches() == 1
    clean.join()
    assert clean.error is None

    cut = Collector(objects.list_cluster_custom_object, GROUP, V2, PLURAL, timeout_seconds=30)
    assert api.wait_for_watches(1)
    api.drop_watches(abrupt=True)
    cut.join()
    assert isinstance(cut.error, urllib3.exceptions.HTTPError)
    assert api.open_watches == 0


# -- CRD, nodes, leases, pods ----------------------------------------------------------------------


def test_the_crd_is_absent_until_installed_and_removing_it_deletes_the_nrts() -> None:
    with FakeApiServer(crd_installed=False) as api, api.api_client() as api_client:
        extensions = client.ApiextensionsV1Api(api_client)
        objects = client.CustomObjectsApi(api_client)
        with pytest.raises(ApiException) as err:
            extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        assert err.value.status == 404
        with pytest.raises(ApiException) as err:
            objects.list_cluster_custom_object(GROUP, V2, PLURAL)
        assert status_of(err.value)["message"] == "the server could not find the requested resource"
        groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
        assert GROUP not in groups

        api.install_crd()
        crd = extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        assert crd.metadata.annotations["api-approved.kubernetes.io"].startswith("https://")
        assert {c.type for c in crd.status.conditions if c.status == "True"} >= {"Established"}
        assert [v.name for v in crd.spec.versions] == ["v1alpha1", "v1alpha2"]
        assert GROUP in {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
        create(objects, example_nrt())

        api.uninstall_crd()
        assert api.nrt("worker-1") is None
        api.install_crd()
        assert objects.list_cluster_custom_object(GROUP, V2, PLURAL)["items"] == []


def test_the_crd_served_is_the_repository_copy() -> None:
    with FakeApiServer() as api:
        assert api.crd.manifest["metadata"]["name"] == f"{PLURAL}.{GROUP}"
    crd_text = (REPO / "deploy" / "crd-noderesourcetopologies.yaml").read_text()
    assert "api-approved.kubernetes.io: https://github.com/kubernetes/enhancements/pull/1870" in crd_text


def test_a_re_registered_node_gets_a_new_uid_and_its_old_nrt_is_collected(
    api: FakeApiServer, kube_api_client: Any, objects: Any
) -> None:
    core = client.CoreV1Api(kube_api_client)
    first_uid = api.register_node("worker-1")
    node = core.read_node("worker-1")
    assert node.metadata.uid == first_uid
    owned = example_nrt()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "worker-1", "uid": first_uid}
    ]
    create(objects, owned)

    second_uid = api.register_node("worker-1")
    assert second_uid != first_uid
    assert core.read_node("worker-1").metadata.uid == second_uid
    assert api.nrt("worker-1") is None, "the garbage collector removes what the old node owned"
    with pytest.raises(ApiException) as err:
        core.read_node("worker-9")
    assert err.value.status == 404


def test_a_lease_can_be_created_read_renewed_patched_and_deleted(kube_api_client: Any) -> None:
    leases = client.CoordinationV1Api(kube_api_client)
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name="rte-worker-1"),
        spec=client.V1LeaseSpec(holder_identity="worker-1", lease_duration_seconds=40),
    )
    created = leases.create_namespaced_lease("kube-node-lease", body)
    assert created.metadata.namespace == "kube-node-lease" and created.metadata.uid

    got = leases.read_namespaced_lease("rte-worker-1", "kube-node-lease")
    got.spec.renew_time = datetime_now()
    renewed = leases.replace_namespaced_lease("rte-worker-1", "kube-node-lease", got)
    assert renewed.spec.renew_time is not None
    assert int(renewed.metadata.resource_version) > int(created.metadata.resource_version)

    with pytest.raises(ApiException) as err:
        leases.replace_namespaced_lease("rte-worker-1", "kube-node-lease", got)  # got is now stale
    assert err.value.status == 409

    patched = leases.patch_namespaced_lease(
        "rte-worker-1", "kube-node-lease", {"spec": {"leaseDurationSeconds": 20}}
    )
    assert patched.spec.lease_duration_seconds == 20 and patched.spec.holder_identity == "worker-1"

    # Leases answer a delete with a Status (pods and custom resources return the object).
    result = leases.delete_namespaced_lease("rte-worker-1", "kube-node-lease")
    assert result["kind"] == "Status" and result["status"] == "Success"
    with pytest.raises(ApiException) as err:
        leases.read_namespaced_lease("rte-worker-1", "kube-node-lease")
    assert err.value.status == 404


def datetime_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def test_pods_are_listed_and_watched_by_node_name(api: FakeApiServer, kube_api_client: Any) -> None:
    core = client.CoreV1Api(kube_api_client)
    api.add_pod("a", node_name="worker-1")
    api.add_pod("b", node_name="worker-2")
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="c"),
        spec=client.V1PodSpec(
            node_name="worker-1", containers=[client.V1Container(name="main", image="pause")]
        ),
    )
    core.create_namespaced_pod("team", pod)
    listed = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=worker-1")
    assert sorted(p.metadata.name for p in listed.items) == ["a", "c"]

    seen = Collector(
        core.list_pod_for_all_namespaces,
        field_selector="spec.nodeName=worker-1",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=5,
        stop_after=2,
    )
    assert api.wait_for_watches(1)
    api.add_pod("d", node_name="worker-2")
    api.add_pod("e", node_name="worker-1")
    core.delete_namespaced_pod("c", "team")
    seen.join()
    assert [(e["type"], e["object"].metadata.name) for e in seen.events] == [("ADDED", "e"), ("DELETED", "c")]

    with pytest.raises(ApiException) as err:
        core.list_pod_for_all_namespaces(field_selector="spec.bogus=1")
    assert err.value.status == 400


# -- log, auth, kubeconfig, command line -----------------------------------------------------------


def test_the_request_log_counts_by_verb_resource_and_outcome(api: FakeApiServer, objects: Any) -> None:
    create(objects, example_nrt())
    api.clear_requests()
    objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-1")
    objects.list_cluster_custom_object(GROUP, V2, PLURAL)
    with pytest.raises(ApiException):
        objects.get_cluster_custom_object(GROUP, V2, PLURAL, "worker-2")
    assert api.writes() == 0
    assert api.counters() == {("get", PLURAL, 200): 1, ("list", PLURAL, 200): 1, ("get", PLURAL, 404): 1}
    assert api.requests[0].user_agent.startswith("OpenAPI-Generator")


def test_a_list_can_be_paged_with_limit_and_continue(objects: Any) -> None:
    for i in range(3):
        create(objects, example_nrt(f"worker-{i}"))
    first = objects.list_cluster_custom_object(GROUP, V2, PLURAL, limit=2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["worker-0", "worker-1"]
    assert first["metadata"]["remainingItemCount"] == 1
    rest = objects.list_cluster_custom_object(
        GROUP, V2, PLURAL, limit=2, _continue=first["metadata"]["continue"]
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["worker-2"]
    assert "continue" not in rest["metadata"]


def test_requests_without_the_token_are_401(api: FakeApiServer) -> None:
    anonymous = client.Configuration()
    anonymous.host = api.url
    with client.ApiClient(anonymous) as api_client, pytest.raises(ApiException) as err:
        client.CustomObjectsApi(api_client).list_cluster_custom_object(GROUP, V2, PLURAL)
    assert err.value.status == 401


@pytest.fixture
def restore_default_configuration() -> Iterator[None]:
    saved = client.Configuration.get_default_copy()
    try:
        yield
    finally:
        client.Configuration.set_default(saved)


@pytest.mark.usefixtures("restore_default_configuration")
def test_load_kube_config_on_the_written_kubeconfig_reaches_the_server(
    api: FakeApiServer, tmp_path: Path
) -> None:
    path = api.write_kubeconfig(tmp_path / "kubeconfig")
    config.load_kube_config(str(path))
    api.register_node("worker-1")
    assert client.CoreV1Api().read_node("worker-1").metadata.name == "worker-1"


def test_the_command_line_serves_and_writes_a_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rte.testing.apiserver",
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
            "--node",
            "worker-1",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("fake apiserver listening on http://127.0.0.1:")
        assert proc.stdout.readline().startswith("kubeconfig written")
        with config.new_client_from_config(str(kubeconfig)) as api_client:
            assert client.CoreV1Api(api_client).read_node("worker-1").metadata.uid
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0
