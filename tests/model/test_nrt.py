import json
from fractions import Fraction

import pytest

from rte.errors import InputError
from rte.model.nrt import from_nrt, to_nrt
from rte.model.topology import (
    Attribute,
    Cost,
    NodeTopology,
    OwnerReference,
    ResourceInfo,
    Zone,
    duplicate_names,
    numa_id_of,
    zone_name,
)
from tests.helpers.nrt_schema import schema_errors


def _zone(numa_id: int, cpus: int, peers: list[int]) -> Zone:
    return Zone(
        name=zone_name(numa_id),
        costs=tuple(Cost(zone_name(j), 10 if j == numa_id else 21) for j in reversed(peers)),
        resources=(
            ResourceInfo("memory", 100 * 2**30, 99 * 2**30, 98 * 2**30),
            ResourceInfo("cpu", cpus, cpus - 2, cpus - 4),
            ResourceInfo("hugepages-2Mi", 0, 0, 0),
        ),
    )


def _topology() -> NodeTopology:
    # deliberately unsorted everywhere, with sparse ids and a two-digit id
    return NodeTopology(
        name="worker-1",
        zones=(_zone(10, 8, [0, 2, 10]), _zone(2, 8, [0, 2, 10]), _zone(0, 40, [0, 2, 10])),
        attributes=(
            Attribute("topologyManagerScope", "container"),
            Attribute("topologyManagerPolicy", "single-numa-node"),
        ),
        annotations={"topology.node.k8s.io/fingerprint": "pfp0v001ef46db3751d8e999"},
        owner_references=(OwnerReference("v1", "Node", "worker-1", "1234-uid"),),
    )


def test_zone_names_use_the_real_kernel_id() -> None:
    assert zone_name(0) == "node-0"
    assert zone_name(17) == "node-17"
    with pytest.raises(ValueError):
        zone_name(-1)


@pytest.mark.parametrize(
    ("name", "numa_id"),
    [
        ("node-0", 0),
        ("node-12", 12),
        ("node-+1", 1),
        ("node-01", 1),
        ("node--1", None),
        ("numa-node-0", None),
        ("node-", None),
        ("node-1a", None),
        ("node-١", None),
    ],
)
def test_zone_names_parse_like_the_reference_consumer(name: str, numa_id: int | None) -> None:
    assert numa_id_of(name) == numa_id


def test_published_object_is_canonical_and_sorted_by_numeric_id() -> None:
    obj = to_nrt(_topology())
    assert [z["name"] for z in obj["zones"]] == ["node-0", "node-2", "node-10"]
    assert [r["name"] for r in obj["zones"][0]["resources"]] == ["cpu", "hugepages-2Mi", "memory"]
    assert [c["name"] for c in obj["zones"][1]["costs"]] == ["node-0", "node-2", "node-10"]
    assert [a["name"] for a in obj["attributes"]] == ["topologyManagerPolicy", "topologyManagerScope"]
    assert obj["zones"][0]["resources"][0] == {
        "name": "cpu",
        "capacity": "40",
        "allocatable": "38",
        "available": "36",
    }
    assert obj["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert obj["metadata"]["ownerReferences"][0]["uid"] == "1234-uid"


def test_two_scans_of_the_same_state_serialise_to_identical_bytes() -> None:
    a = _topology()
    b = NodeTopology(
        name=a.name,
        zones=tuple(reversed(a.zones)),
        attributes=tuple(reversed(a.attributes)),
        annotations=a.annotations,
        owner_references=a.owner_references,
    )
    assert json.dumps(to_nrt(a)) == json.dumps(to_nrt(b))


def test_published_objects_validate_against_the_crd_schema() -> None:
    assert schema_errors(to_nrt(_topology())) == []


def test_an_empty_topology_still_sends_a_zone_list() -> None:
    obj = to_nrt(NodeTopology(name="empty"))
    assert obj["zones"] == []
    assert schema_errors(obj) == []


def test_the_schema_check_itself_rejects_bad_objects() -> None:
    obj = to_nrt(_topology())
    obj["zones"][0]["resources"][0]["available"] = "12xyz"
    del obj["zones"][1]["type"]
    errors = schema_errors(obj)
    assert len(errors) == 2


def test_round_trip_preserves_everything() -> None:
    topo = _topology().canonical()
    assert from_nrt(to_nrt(topo)) == topo


def test_reading_keeps_published_zone_order() -> None:
    obj = to_nrt(_topology())
    obj["zones"].reverse()
    assert [z.name for z in from_nrt(obj).zones] == ["node-10", "node-2", "node-0"]


def test_reading_accepts_every_quantity_form_and_integers() -> None:
    obj = to_nrt(_topology())
    res = obj["zones"][0]["resources"]
    res[0].update(capacity=40, allocatable="38", available="35500m")
    res[2].update(capacity="100Gi", allocatable="99Gi", available="1e11")
    zone = from_nrt(obj).zones[0]
    assert zone.resource("cpu") == ResourceInfo("cpu", 40, 38, Fraction(71, 2))
    mem = zone.resource("memory")
    assert mem is not None and mem.capacity == 100 * 2**30 and mem.available == 10**11


def test_v1alpha1_objects_are_read_too() -> None:
    obj = {
        "apiVersion": "topology.node.k8s.io/v1alpha1",
        "kind": "NodeResourceTopology",
        "metadata": {"name": "old"},
        "topologyPolicies": ["SingleNUMANodeContainerLevel"],
        "zones": [
            {
                "name": "node-0",
                "type": "Node",
                "resources": [{"name": "cpu", "capacity": "4", "allocatable": "4", "available": "2"}],
            }
        ],
    }
    assert schema_errors(obj, "v1alpha1") == []
    topo = from_nrt(obj)
    assert topo.topology_policies == ("SingleNUMANodeContainerLevel",)
    assert topo.attributes == ()
    assert topo.zones[0].resource("cpu") == ResourceInfo("cpu", 4, 4, 2)


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (
            lambda o: o["zones"][1]["resources"][0].update(available="12xyz"),
            "zones[1].resources[0].available",
        ),
        (lambda o: o["zones"][0].pop("type"), "zones[0].type"),
        (lambda o: o["zones"][0]["costs"][0].update(value="10"), "zones[0].costs[0].value"),
        (lambda o: o.update(apiVersion="topology.node.k8s.io/v9"), "apiVersion"),
        (lambda o: o.update(kind="Pod"), "kind"),
        (lambda o: o["metadata"].pop("name"), "metadata.name"),
        (lambda o: o.update(zones={"a": 1}), "zones"),
        (lambda o: o["attributes"][0].pop("value"), "attributes[0].value"),
    ],
)
def test_malformed_objects_raise_an_error_naming_the_field(mutate, where: str) -> None:  # type: ignore[no-untyped-def]
    obj = to_nrt(_topology())
    mutate(obj)
    with pytest.raises(InputError) as info:
        from_nrt(obj)
    assert info.value.source == where


def test_a_negative_quantity_from_a_cluster_reads_as_zero_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    obj = to_nrt(_topology())
    obj["zones"][0]["resources"][0]["available"] = "-1"
    obj["zones"][0]["resources"][0]["capacity"] = -3
    with caplog.at_level("WARNING", logger="rte.model.nrt"):
        topo = from_nrt(obj)
    resource = topo.zones[0].resources[0]
    assert (resource.capacity, resource.available) == (0, 0)
    (record,) = caplog.records
    assert record.getMessage() == (
        f"NRT {topo.name}: negative quantities read as 0:"
        " zones[0].resources[0].capacity=-3, zones[0].resources[0].available=-1"
    )


def test_a_negative_quantity_read_strictly_is_an_error_naming_the_field() -> None:
    obj = to_nrt(_topology())
    obj["zones"][1]["resources"][0]["allocatable"] = "-500m"
    with pytest.raises(InputError) as info:
        from_nrt(obj, strict=True)
    assert info.value.source == "zones[1].resources[0].allocatable"
    assert info.value.detail == "negative quantity '-500m': an NRT never holds one"


def test_with_attributes_replaces_by_name_without_duplicates() -> None:
    topo = _topology().with_attributes([Attribute("topologyManagerScope", "pod"), Attribute("x", "1")])
    assert duplicate_names(a.name for a in topo.attributes) == []
    assert topo.attribute("topologyManagerScope") == "pod"
    assert topo.attribute("x") == "1"


def test_numa_zones_skip_other_types_and_invalid_names() -> None:
    topo = NodeTopology(
        name="n", zones=(Zone("node-0"), Zone("socket-0", type="Socket"), Zone("numa-node-1"))
    )
    assert [z.name for z in topo.numa_zones()] == ["node-0"]
