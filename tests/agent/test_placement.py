"""The agent's numaplacement attributes: which containers, when, and byte equality with upstream.

The expected attribute values of the fixture node are the upstream Go codec's output for the same
containers (tests/fixtures/numaplacement/upstream_vectors.json, case
"dell-r640-sriov-static podresources list"); the rules are RTE's ``ComputeNUMAPlacementPayload``
(resource-topology-exporter ``pkg/resourcemonitor/resourcemonitor.go``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rte.agent.compute.placement import compute_placement
from rte.agent.compute.reading import KubeletReading, NodeReading, PublishingRules
from rte.agent.compute.topology import compute_topology
from rte.agent.settings import AgentSettings, load_settings
from rte.cli import main
from rte.host.kubelet_config import KubeletConfig
from rte.host.kubelet_config_files import load_kubelet_config
from rte.host.sysfs import read_machine
from rte.model import numaplacement as npl
from rte.model.nrt import to_nrt
from rte.model.numaplacement import ContainerId
from rte.model.vocabulary import FingerprintMethod, NumaPlacementMode
from rte.podres.files import PodResourcesFiles
from rte.podres.types import ContainerResources, Device, MemoryBlock, PodResources
from tests.helpers.nrt_schema import schema_errors
from tests.helpers.paths import FIXTURES, R640_KUBELET_CONFIG, R640_STATIC, R640_SYSFS

UPSTREAM = json.loads((FIXTURES / "numaplacement" / "upstream_vectors.json").read_text())
R640_CASE = next(c for c in UPSTREAM["encode"] if c["name"] == "dell-r640-sriov-static podresources list")
CONTAINER, NONE = NumaPlacementMode.CONTAINER, NumaPlacementMode.NONE
SNN = replace(KubeletConfig(), topology_manager_policy="single-numa-node")
CPU_NODE = {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 2}  # a machine with sparse-looking ids 0, 1, 2


def _pod(name: str, *containers: ContainerResources, namespace: str = "ns") -> PodResources:
    return PodResources(namespace, name, containers)


def _cpus(name: str, *ids: int) -> ContainerResources:
    return ContainerResources(name, cpu_ids=frozenset(ids))


def _place(pods: list[PodResources], *, node_ids: tuple[int, ...] = (0, 1, 2), **kw: Any) -> Any:
    counted = kw.pop("counted", [(p.namespace, p.name) for p in pods])
    return compute_placement(
        kw.pop("mode", CONTAINER), kw.pop("config", SNN), node_ids, CPU_NODE, pods, counted
    )


# --- which containers, and when -----------------------------------------------------------------


def test_each_exclusive_container_is_placed_on_the_node_of_its_cpus_devices_or_memory() -> None:
    pods = [
        _pod("a", _cpus("x", 2, 3), ContainerResources("shared")),
        _pod("b", ContainerResources("dev", devices=(Device("vendor/nic", ("d1",), (2,)),))),
        _pod("c", ContainerResources("mem", memory=(MemoryBlock("memory", 1024, (0,)),))),
        _pod("d", ContainerResources("nodev", devices=(Device("vendor/nic", ("d2",)),))),  # no topology
        _pod("e", ContainerResources("noids", devices=(Device("vendor/nic", (), (1,)),))),  # no device ids
    ]
    placement = _place(pods)
    assert placement.containers == (
        (ContainerId("ns", "a", "x"), 1),
        (ContainerId("ns", "b", "dev"), 2),
        (ContainerId("ns", "c", "mem"), 0),
    )
    expected = npl.encode(3, placement.containers)
    assert placement.metadata == expected.pack_metadata() == "npv0v001::ve=leb89::cc=3::nn=3::bn=0"
    assert placement.vectors == expected.vectors


def test_only_pods_the_fingerprint_counts_are_encoded() -> None:
    pods = [_pod("a", _cpus("x", 0)), _pod("b", _cpus("y", 2))]
    placement = _place(pods, counted=[("ns", "b")])
    assert placement.containers == ((ContainerId("ns", "b", "y"), 1),)


def test_pods_whose_spec_says_they_ended_are_left_out() -> None:
    pods = [_pod("a", _cpus("x", 0)), _pod("b", _cpus("y", 2))]
    placement = compute_placement(
        CONTAINER, SNN, (0, 1, 2), CPU_NODE, pods, [("ns", "a"), ("ns", "b")], [("ns", "a")]
    )
    assert placement.containers == ((ContainerId("ns", "b", "y"), 1),)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"mode": NONE}, "numa_placement is none"),
        ({"config": None}, "Topology Manager policy unknown is not single-numa-node"),
        (
            {"config": replace(SNN, topology_manager_policy="restricted")},
            "Topology Manager policy restricted is not single-numa-node",
        ),
        ({"counted": None}, "no pod fingerprint is published"),
    ],
)
def test_nothing_is_published_when_off_off_policy_or_without_fingerprint(
    changes: dict[str, Any], reason: str
) -> None:
    placement = _place([_pod("a", _cpus("x", 0))], **changes)
    assert (placement.metadata, placement.vectors, placement.skipped, placement.refused) == (
        None,
        {},
        reason,
        False,
    )


@pytest.mark.parametrize(
    ("container", "reason"),
    [
        (_cpus("x", 1, 2), "ns/a/x: exclusive resources on NUMA nodes [0, 1]"),
        (
            ContainerResources("x", cpu_ids=frozenset({0}), memory=(MemoryBlock("memory", 1, (0, 1)),)),
            "ns/a/x: exclusive resources on NUMA nodes [0, 1]",
        ),
        (_cpus("x", 99), "ns/a/x: a CPU of an unknown NUMA node"),
        (
            ContainerResources("x", memory=(MemoryBlock("memory", 1, (7,)),)),
            "ns/a/x: NUMA node 7 is not one of the machine's",
        ),
    ],
)
def test_a_container_on_two_nodes_or_an_unknown_node_withholds_the_whole_placement(
    container: ContainerResources, reason: str
) -> None:
    placement = _place([_pod("ok", _cpus("y", 0)), _pod("a", container)])
    assert (placement.metadata, placement.skipped, placement.refused) == (None, reason, True)


def test_sparse_numa_ids_give_nn_the_highest_id_plus_one_and_vectors_on_the_real_zone() -> None:
    pods = [_pod("a", _cpus("x", 0)), _pod("b", _cpus("y", 4)), _pod("c", _cpus("z", 5))]
    placement = _place(pods, node_ids=(0, 2))
    assert placement.metadata == "npv0v001::ve=leb89::cc=3::nn=3::bn=2"
    assert set(placement.vectors) == {0}
    # upstream's decoder accepts it (vector keys and bn below nn), and gives every container back
    payload = npl.unpack_metadata(placement.metadata).with_vectors(placement.vectors)
    assert npl.decode(payload, [c for c, _ in placement.containers]) == dict(placement.containers)


def test_sparse_case_matches_the_upstream_encoder() -> None:
    case = next(c for c in UPSTREAM["encode"] if c["name"] == "sparse ids as nn=max+1 (0 and 2 of 3)")
    assert {n for *_, n in case["containers"]} == {0, 2}
    assert case["metadata"].endswith("::nn=3::bn=2")


# --- the fixture node, end to end ---------------------------------------------------------------


def _r640(mode: NumaPlacementMode = CONTAINER, method: FingerprintMethod = FingerprintMethod.ALL) -> Any:
    files = PodResourcesFiles(R640_STATIC)
    reading = NodeReading(
        node_name="r640",
        machine=read_machine(R640_SYSFS, pci=False),
        config=load_kubelet_config(R640_KUBELET_CONFIG),
        kubelet=KubeletReading(files.get_allocatable(), files.list()),
        rules=PublishingRules(method, numa_placement=mode),
    )
    return compute_topology(reading)


def _placement_attributes(nrt: dict[str, Any]) -> tuple[str | None, dict[str, str]]:
    metadata = next((a["value"] for a in nrt["attributes"] if a["name"] == npl.METADATA_ATTRIBUTE), None)
    vectors = {
        z["name"].removeprefix("node-"): a["value"]
        for z in nrt["zones"]
        for a in z.get("attributes", [])
        if a["name"] == npl.VECTOR_ATTRIBUTE
    }
    return metadata, vectors


@pytest.mark.parametrize("method", list(FingerprintMethod))
def test_the_fixture_node_publishes_what_the_upstream_codec_encodes(method: FingerprintMethod) -> None:
    computed = _r640(method=method)
    assert computed.placement.containers == tuple(
        (ContainerId(ns, pod, ctr), numa) for ns, pod, ctr, numa in R640_CASE["containers"]
    )
    nrt = to_nrt(computed.topology)
    assert schema_errors(nrt) == []
    assert _placement_attributes(nrt) == (R640_CASE["metadata"], R640_CASE["vectors"])


def _dump(tmp: Path, *extra: str, config: Path = R640_KUBELET_CONFIG) -> tuple[int, dict[str, Any], str]:
    args = ["dump", "--sysfs", str(R640_SYSFS), "--node-name", "n1", "--podresources", str(R640_STATIC)]
    result = CliRunner().invoke(main, [*args, "--kubelet-config", str(config), "-o", "json", *extra])
    return result.exit_code, json.loads(result.stdout) if result.exit_code == 0 else {}, result.stderr


def test_rte_dump_shows_the_upstream_bytes_and_none_turns_them_off(tmp_path: Path) -> None:
    code, nrt, err = _dump(tmp_path)
    assert code == 0, err
    assert _placement_attributes(nrt) == (R640_CASE["metadata"], R640_CASE["vectors"])
    code, nrt, err = _dump(tmp_path, "--numa-placement", "NONE")
    assert code == 0, err
    assert _placement_attributes(nrt) == (None, {})


def test_rte_dump_publishes_no_placement_under_another_policy(tmp_path: Path) -> None:
    text = R640_KUBELET_CONFIG.read_text().replace("single-numa-node", "best-effort")
    assert "best-effort" in text
    config = tmp_path / "kubelet.yaml"
    config.write_text(text)
    code, nrt, err = _dump(tmp_path, config=config)
    assert code == 0, err
    assert _placement_attributes(nrt) == (None, {})


def test_rte_dump_refuses_a_bad_mode_with_status_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["dump", "--no-kubelet", "--numa-placement", "pod"])
    assert result.exit_code == 2
    assert "--numa-placement" in result.stderr


# --- the setting in every layer -----------------------------------------------------------------


def load(**kwargs: Any) -> AgentSettings:
    kwargs.setdefault("env", {})
    return load_settings(hostname=lambda: "host-1", **kwargs)


def test_numa_placement_defaults_to_container_and_is_set_by_flag_env_and_file(tmp_path: Path) -> None:
    assert load().numa_placement is CONTAINER
    assert load(flags={"numa_placement": "none"}).numa_placement is NONE
    assert load(env={"RTE_NUMA_PLACEMENT": "None"}).numa_placement is NONE
    config = tmp_path / "agent.yaml"
    config.write_text("numa_placement: none\n")
    assert load(config_file=config).numa_placement is NONE
    result = CliRunner().invoke(main, ["run", "--dump-config", "--numa-placement", "none"])
    assert result.exit_code == 0, result.output
    assert "numa_placement: none" in result.stdout
    bad = CliRunner().invoke(main, ["run", "--dump-config"], env={"RTE_NUMA_PLACEMENT": "pod"})
    assert bad.exit_code == 2
    assert bad.stderr.startswith("rte: error: RTE_NUMA_PLACEMENT:")


def test_rte_dump_s_table_lists_the_containers_pinned_on_each_zone() -> None:
    args = ["dump", "--sysfs", str(R640_SYSFS), "--node-name", "n1", "--podresources", str(R640_STATIC)]
    result = CliRunner().invoke(main, [*args, "--kubelet-config", str(R640_KUBELET_CONFIG)])
    assert result.exit_code == 0, result.stderr
    zones = result.stdout.split("\n\n")
    assert "pinned containers (numaplacement): cnf/dpdk-app-0/app" in zones[1]  # node-0
    assert "topology.node.k8s.io/numaplacement-vector: !" in zones[2]  # node-1
    assert "pinned containers (numaplacement): cnf/numa1-worker-7f9c/worker" in zones[2]
