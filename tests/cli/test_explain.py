"""``rte explain`` against the demo cluster in the apiserver double (rte.testing.views_cluster).

Worker zones (node-0 / node-1): 22 / 24 CPUs and 90.5 GiB allocatable each. Free at DEMO_NOW:
worker-1 6 / 24 CPUs, 58.5 / 90.5 GiB; worker-2 2 / 6 CPUs; worker-3 14 / 24 CPUs, 74.5 / 90.5 GiB;
gpu-1 has no VFs and no hugepages at all.

* default/train-big asks 24 CPUs, 96 GiB, 2 VFs: no zone has 96 GiB. worker-1 and worker-3's
  node-1 lack only memory, 5.5 GiB of 96 (6 %); worker-2's best zone (node-1) lacks 18 of 24
  CPUs (75 %) and 53.5 GiB (56 %); gpu-1 lacks the VFs entirely.
* telco/du-2 asks 12 CPUs, 24 GiB, 2 GiB hugepages, 2 VFs: fits worker-1 (node-1, the only zone
  with 12 CPUs free) and worker-3 (node-0, the lowest id with room).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rte.cli import main
from rte.cluster.reader import ClusterReader
from rte.cluster.shortfall import ZoneShortfall
from rte.commands.explain import Explanation, explain
from rte.testing.apiserver import FakeApiServer
from rte.testing.views_cluster import GI, pod
from tests.cli.conftest import DEMO_NOW

# The kubelet's memory manager finds no zone set for 96Gi once zone 0 already holds single-NUMA
# blocks (it cannot join a group), gives no hint, and its Allocate refuses the pod.
TRAIN_BIG_MEMORY = (
    "UnexpectedAdmissionError: memory manager: no NUMA zone set containing the merged hint has"
    " memory=96Gi free"
)


@pytest.fixture
def reader(demo_api: FakeApiServer) -> Iterator[ClusterReader]:
    r = ClusterReader(demo_api.api_client())
    yield r
    r.close()


def run_explain(reader: ClusterReader, ref: str, **options: Any) -> tuple[str, Explanation]:
    out = io.StringIO()
    e = explain(reader, ref, namespace="default", now=DEMO_NOW.timestamp(), out=out, **options)
    return out.getvalue(), e


def cli(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["explain", "--kubeconfig", str(kubeconfig), *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_pod_that_fits_nowhere_gets_every_verdict_and_the_closest_misses(reader: ClusterReader) -> None:
    text, _ = run_explain(reader, "default/train-big")
    assert text.splitlines() == [
        "Pod default/train-big (Guaranteed), phase Pending, not bound to a node;",
        "scheduler topo-aware-scheduler reads NRTs.",
        "Requests (the whole pod): cpu 24, intel.com/sriov_netdevice 2, memory 96Gi",
        "",
        "NODE       FITS   SCORE   LEASE          REASON",
        "gpu-1      no     -       8s             intel.com/sriov_netdevice is not allocatable on the node",
        f"worker-1   no     -       3s             {TRAIN_BIG_MEMORY}",
        "worker-2   no     -       6s             single-numa-node: no single NUMA zone holds cpu=24",
        f"worker-3   no     -       3m5s (stale)   {TRAIN_BIG_MEMORY}",
        "",
        "Fits NUMA-aligned on none of 4 node(s).",
        "",
        "Closest to fitting (what the best NUMA zone lacks for the whole pod):",
        "  worker-1   node-1   memory 5.5Gi of 96Gi (6%)",
        "  worker-3   node-1   memory 5.5Gi of 96Gi (6%)",
        "  worker-2   node-1   cpu 18 of 24 (75%), memory 53.5Gi of 96Gi (56%)",
        "",
        # worker-1's NRT publishes numaplacement (du-1 on node-0); worker-2's pods are not its set
        "Pods pinned on those zones (numaplacement):",
        "  worker-1   node-1   none",
    ]


def test_a_pod_that_fits_gets_the_best_node_and_what_the_others_lack(reader: ClusterReader) -> None:
    text, e = run_explain(reader, "telco/du-2", closest_count=5)
    assert [(d.node, d.fits, d.reason) for d in e.decisions if d.fits] == [
        ("worker-1", True, "fits NUMA zone 1"),
        ("worker-3", True, "fits NUMA zone 0"),
    ]
    lines = text.splitlines()
    best = max((d for d in e.decisions if d.fits), key=lambda d: d.score or 0)
    assert (
        f"Fits NUMA-aligned on 2 of 4 node(s); best {best.node} (score {best.score}). If it stays Pending,"
        " something other than NUMA alignment holds it." in lines
    )
    assert lines[-2:] == [
        "  worker-2   node-1   cpu 6 of 12 (50%)",
        "  gpu-1      node-0   hugepages-1Gi 2Gi (not on the node),"
        " intel.com/sriov_netdevice 2 (not on the node)",
    ]


def test_a_pod_of_a_scheduler_that_reads_no_nrts_is_told_so(reader: ClusterReader) -> None:
    text, e = run_explain(reader, "batch-1")
    assert not e.reads_nrt
    assert text.splitlines()[1] == (
        "scheduler default-scheduler does not read NRTs: it places the pod without looking at NUMA zones,"
        " and the kubelet may reject it with TopologyAffinityError; NUMA-aware: topo-aware-scheduler"
        " (spec.schedulerName)."
    )
    text, e = run_explain(reader, "batch-1", nrt_schedulers=["default-scheduler"])
    assert e.reads_nrt and text.splitlines()[1] == "scheduler default-scheduler reads NRTs."


def test_json_and_yaml_carry_the_verdicts_the_near_misses_and_the_scheduler(reader: ClusterReader) -> None:
    doc = json.loads(run_explain(reader, "default/train-big", output="json")[0])
    assert doc == yaml.safe_load(run_explain(reader, "default/train-big", output="yaml")[0])
    assert doc["pod"] == {
        "namespace": "default",
        "name": "train-big",
        "phase": "Pending",
        "qosClass": "Guaranteed",
        "nodeName": None,
        "schedulerName": "topo-aware-scheduler",
    }
    assert doc["schedulerReadsNRT"] is True
    assert doc["requests"] == {"cpu": "24", "intel.com/sriov_netdevice": "2", "memory": str(96 * GI)}
    assert [(n["node"], n["fits"], n["leaseStale"]) for n in doc["nodes"]] == [
        ("gpu-1", False, False),
        ("worker-1", False, False),
        ("worker-2", False, False),
        ("worker-3", False, True),
    ]
    assert doc["closest"][0] == {
        "node": "worker-1",
        "zone": "node-1",
        "pinnedPods": [],  # numaplacement: du-1 is pinned on node-0
        "lacks": [{"resource": "memory", "requested": str(96 * GI), "missing": str(11 * GI // 2)}],
    }
    assert (doc["schedulerMessage"], doc["kubeletRejection"]) == (None, None)


def test_the_pods_pinned_on_a_closest_zone_are_named_from_numaplacement(reader: ClusterReader) -> None:
    """worker-1 is among the closest nodes and its NRT says telco/du-1 sits on node-0 (its
    fingerprint matches the node's pods, so the placement decodes); worker-2's does not."""
    _, e = run_explain(reader, "default/train-big")
    assert e.holders(ZoneShortfall("worker-1", "node-0", ())) == ["telco/du-1"]
    assert e.holders(ZoneShortfall("worker-1", "node-1", ())) == []
    assert e.holders(ZoneShortfall("worker-2", "node-0", ())) is None  # not its NRT's pod set
    assert e.placements["worker-2"].outcome.value == "mismatch"


def test_the_scheduler_message_and_a_kubelet_rejection_are_shown(
    demo_api: FakeApiServer, reader: ClusterReader
) -> None:
    message = "0/4 nodes are available: 4 cannot align container."
    demo_api.create_object(
        "pods",
        pod(
            "waiting",
            {"cpu": 2, "memory": GI},
            phase="Pending",
            status={"conditions": [{"type": "PodScheduled", "status": "False", "message": message}]},
        ),
    )
    text, _ = run_explain(reader, "default/waiting")
    assert text.splitlines()[-2:] == ["", f"The scheduler said: {message}"]
    demo_api.create_object(
        "pods",
        pod(
            "rejected",
            {"cpu": 2, "memory": GI},
            node_name="worker-2",
            phase="Failed",
            scheduler="default-scheduler",
            status={
                "reason": "TopologyAffinityError",
                "message": "Resources cannot be allocated with Topology locality",
            },
        ),
    )
    lines = run_explain(reader, "default/rejected")[0].splitlines()
    assert lines[0] == "Pod default/rejected (Guaranteed), phase Failed, bound to worker-2;"
    assert lines[2] == (
        "The kubelet rejected it: TopologyAffinityError: Resources cannot be allocated with Topology locality"
    )
    assert lines[3].endswith("explain is for Pending pods.")


def test_a_name_takes_the_namespace_of_n_else_of_the_kubeconfig_context(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path, tmp_path: Path
) -> None:
    code, out, err = cli(live_kubeconfig, "du-2", "-n", "telco", "-o", "json")
    assert (code, err) == (0, "") and json.loads(out)["pod"]["namespace"] == "telco"
    in_telco = tmp_path / "telco.kubeconfig"
    in_telco.write_text(yaml.safe_dump(fake_apiserver.kubeconfig(namespace="telco")))
    code, out, err = cli(in_telco, "du-2", "-o", "json")
    assert (code, err) == (0, "") and json.loads(out)["pod"]["name"] == "du-2"
    code, out, err = cli(live_kubeconfig, "du-2")  # the context's namespace is default
    assert (code, out) == (2, "")
    assert err == f"rte: error: pod default/du-2: not found at {fake_apiserver.url}\n"


def test_bad_references_and_a_missing_crd_are_one_line_with_exit_2(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path
) -> None:
    code, _, err = cli(live_kubeconfig, "a/b/c")
    assert (code, err) == (2, "rte: error: POD: expected NAMESPACE/NAME or NAME, got 'a/b/c'\n")
    fake_apiserver.uninstall_crd()
    code, out, err = cli(live_kubeconfig, "default/train-big")
    assert (code, out) == (2, "")
    assert err.startswith("rte: error: noderesourcetopologies.topology.node.k8s.io: the apiserver at ")
    assert err.count("\n") == 1
