"""``rte top`` against the apiserver double holding the demo cluster (rte.testing.views_cluster).

The demo, at DEMO_NOW: worker-1 calm (NRT changed 14 min ago, Lease 3 s); worker-2 busy, with
telco/cu-3 started 2 s ago and not yet in its NRT's fingerprint; worker-3's agent stopped (Lease
3 min 5 s old, its duration 40 s); gpu-1 with GPUs and pod scope (NRT 5 h, Lease 8 s). Workers'
zones allocate 22 and 24 CPUs, 90.5 GiB, 8 GiB of 1 GiB hugepages and 8 VFs.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from rte.cli import main
from rte.cluster.reader import ClusterReader
from rte.commands.top import CLEAR_SCREEN, TopOptions, top
from rte.errors import ConfigError
from rte.model import fingerprint as fp
from rte.model.vocabulary import InformerMode
from rte.testing.apiserver import FakeApiServer
from rte.testing.views_cluster import lease, pod, renew_heartbeats
from tests.cli.conftest import DEMO_NOW
from tests.helpers.paths import REPO

Opener = Callable[[str | None], ClusterReader]
HEADER = (
    "NODE       ZONE     CPU     MEMORY          HUGEPAGES     DEVICES               POLICY"
    "                       NRT-AGE   LEASE   PODS       STATUS"
)


def run_top(open_demo: Opener, **options: Any) -> str:
    out = io.StringIO()
    top(open_demo, TopOptions(**options), out=out, clock=DEMO_NOW.timestamp)
    return out.getvalue()


def cli(kubeconfig: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["top", "--kubeconfig", str(kubeconfig), *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_table_has_one_line_per_node_and_zone_with_ages_fingerprints_and_stale_marks(
    open_demo: Opener,
) -> None:
    assert run_top(open_demo).splitlines() == [
        HEADER,
        "gpu-1      node-0   22/30   186Gi/250Gi     -             gpu=1/2               single-numa-node/pod"
        "         5h        8s      match      OK",
        "gpu-1      node-1   32/32   250Gi/250Gi     -             gpu=2/2               single-numa-node/pod"
        "         5h        8s      match      OK",
        "worker-1   node-0   6/22    58.5Gi/90.5Gi   1Gi:4Gi/8Gi   sriov_netdevice=4/8"
        "   single-numa-node/container   14m       3s      match      OK",
        "worker-1   node-1   24/24   90.5Gi/90.5Gi   1Gi:8Gi/8Gi   sriov_netdevice=8/8"
        "   single-numa-node/container   14m       3s      match      OK",
        "worker-2   node-0   2/22    26.5Gi/90.5Gi   1Gi:4Gi/8Gi   sriov_netdevice=2/8"
        "   single-numa-node/container   2m        6s      mismatch   PodsMismatch",
        "worker-2   node-1   6/24    42.5Gi/90.5Gi   1Gi:8Gi/8Gi   sriov_netdevice=4/8"
        "   single-numa-node/container   2m        6s      mismatch   PodsMismatch",
        "worker-3   node-0   14/22   74.5Gi/90.5Gi   1Gi:8Gi/8Gi   sriov_netdevice=6/8"
        "   single-numa-node/container   41m       3m5s    match      LeaseStale",
        "worker-3   node-1   24/24   90.5Gi/90.5Gi   1Gi:8Gi/8Gi   sriov_netdevice=8/8"
        "   single-numa-node/container   41m       3m5s    match      LeaseStale",
    ]


def test_wide_adds_both_fingerprints_the_pods_counted_and_whole_device_names(open_demo: Opener) -> None:
    lines = run_top(open_demo, names=("worker-2",), output="wide").splitlines()
    assert lines[0].split() == [*HEADER.split(), "FINGERPRINT", "COMPUTED", "COUNTED", "PINNED-PODS"]
    published = fp.compute([("telco", "cu-1"), ("telco", "cu-2")])
    computed = fp.compute([("telco", "cu-1"), ("telco", "cu-2"), ("telco", "cu-3")])
    assert lines[1].split()[5] == "intel.com/sriov_netdevice=2/8"
    assert lines[1].split()[-4:] == [published, computed, "3", "<mismatch>"]  # cu-3 is not counted yet
    assert len(lines) == 3


def test_wide_shows_the_pods_pinned_on_each_zone_when_the_placement_decodes(open_demo: Opener) -> None:
    """worker-1's NRT publishes numaplacement and its fingerprint matches: du-1 sits on node-0;
    worker-2's pods are not its NRT's set (cu-3 is new), so its placement cannot be decoded."""
    lines = run_top(open_demo, names=("worker-1", "worker-2"), output="wide").splitlines()
    assert [line.split()[-1] for line in lines[1:]] == ["telco/du-1", "-", "<mismatch>", "<mismatch>"]
    nodes = {n["node"]: n for n in json.loads(run_top(open_demo, names=("worker-1",), output="json"))}
    assert nodes["worker-1"]["numaPlacement"] == {
        "outcome": "decoded",
        "detail": "",
        "zones": {"node-0": ["telco/du-1/app"], "node-1": []},
    }


def test_json_and_yaml_hold_the_same_nodes_with_quantities_ages_and_findings(open_demo: Opener) -> None:
    nodes = json.loads(run_top(open_demo, output="json"))
    assert nodes == yaml.safe_load(run_top(open_demo, output="yaml"))
    by_name = {n["node"]: n for n in nodes}
    assert list(by_name) == ["gpu-1", "worker-1", "worker-2", "worker-3"]
    w3 = by_name["worker-3"]
    assert w3["stale"] is True and w3["status"] == ["LeaseStale"]
    assert w3["lease"] == {"namespace": "rte", "ageSeconds": 185.0, "durationSeconds": 40.0, "stale": True}
    assert w3["nrtAgeSeconds"] == 41 * 60
    assert w3["topologyManager"] == {"policy": "single-numa-node", "scope": "container"}
    assert w3["zones"][0]["resources"][0] == {
        "name": "cpu",
        "capacity": "22",
        "allocatable": "22",
        "available": "14",
    }
    w2 = by_name["worker-2"]
    assert w2["stale"] is True and w2["status"] == ["PodsMismatch"]
    assert w2["fingerprint"]["result"] == "mismatch"
    assert w2["fingerprint"]["method"] == "with-exclusive-resources"
    assert w2["fingerprint"]["podCount"] == 3
    assert by_name["worker-1"]["status"] == ["OK"] and by_name["worker-1"]["stale"] is False


def test_a_label_selector_picks_nodes_then_their_nrts(live_kubeconfig: Path) -> None:
    code, out, err = cli(live_kubeconfig, "-l", "nvidia.com/gpu.present=true")
    assert (code, err) == (0, "")
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [["gpu-1", "node-0"], ["gpu-1", "node-1"]]
    code, out, _ = cli(live_kubeconfig, "-l", "nvidia.com/gpu.present=true", "worker-1", "gpu-1")
    assert code == 0 and {line.split()[0] for line in out.splitlines()[1:]} == {"gpu-1"}
    code, out, err = cli(live_kubeconfig, "-l", "no-such-label")
    assert (code, out, err) == (0, "No resources found\n", "")


def test_a_selector_the_apiserver_cannot_parse_is_bad_input_exit_2(live_kubeconfig: Path) -> None:
    """Issue #24: it exited 1, as if the cluster had failed."""
    code, out, err = cli(live_kubeconfig, "-l", "a=b,==")
    assert (code, out) == (2, "")
    assert (
        err.startswith("rte: error: --selector: 'a=b,==': unable to parse requirement")
        and err.count("\n") == 1
    )


def test_named_nodes_are_shown_and_an_unknown_name_is_a_one_line_input_error(live_kubeconfig: Path) -> None:
    code, out, _ = cli(live_kubeconfig, "worker-3", "-o", "json")
    assert code == 0 and [n["node"] for n in json.loads(out)] == ["worker-3"]
    code, out, err = cli(live_kubeconfig, "worker-3", "worker-9")
    assert (code, out) == (2, "")
    assert err == "rte: error: NODE: no Node or NodeResourceTopology named worker-9\n"


def test_the_stale_threshold_and_the_lease_namespace_are_flags(
    demo_api: FakeApiServer, open_demo: Opener
) -> None:
    stale = [line.split()[-1] for line in run_top(open_demo, names=("worker-3",)).splitlines()[1:]]
    assert stale == ["LeaseStale", "LeaseStale"]
    relaxed = run_top(open_demo, names=("worker-3",), stale_after=600.0).splitlines()[1]
    assert relaxed.split()[-3:] == ["3m5s", "match", "OK"]
    # Without Leases read, nothing is said about them.
    line = run_top(open_demo, names=("worker-3",), lease_namespace="").splitlines()[1]
    assert line.split()[-4:] == ["41m", "-", "match", "OK"]
    # A node whose Lease is gone is marked, but not stale: other agents keep no Lease.
    demo_api.delete_object("leases", "worker-1", "rte")
    (worker1,) = json.loads(run_top(open_demo, names=("worker-1",), output="json"))
    assert (worker1["status"], worker1["stale"], worker1["lease"]) == (["NoLease"], False, None)


def test_a_mismatch_clears_once_the_agent_publishes_the_pod_and_follows_the_informer_mode(
    demo_api: FakeApiServer, open_demo: Opener, objects: Any
) -> None:
    nrt = demo_api.nrt("worker-2")
    assert nrt is not None
    sign = fp.compute([("telco", "cu-1"), ("telco", "cu-2"), ("telco", "cu-3")])
    attributes = [{**a, "value": sign} if a["name"] == fp.ATTRIBUTE else a for a in nrt["attributes"]]
    # What the agent sends once it counts cu-3: a merge patch of the (atomic) attribute list.
    objects.patch_cluster_custom_object(
        "topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "worker-2", {"attributes": attributes}
    )
    assert run_top(open_demo, names=("worker-2",)).splitlines()[1].split()[-2:] == ["match", "OK"]
    # A Succeeded exclusive pod counts for the dedicated informer, not for the shared one.
    demo_api.create_object(
        "pods",
        pod("done", {"cpu": 1, "memory": "1Gi"}, namespace="telco", node_name="worker-2", phase="Succeeded"),
    )
    assert run_top(open_demo, names=("worker-2",)).splitlines()[1].split()[-1] == "PodsMismatch"
    shared = run_top(open_demo, names=("worker-2",), informer_mode=InformerMode.SHARED)
    assert shared.splitlines()[1].split()[-1] == "OK"


def test_a_missing_crd_is_one_line_and_exit_2(fake_apiserver: FakeApiServer, live_kubeconfig: Path) -> None:
    fake_apiserver.uninstall_crd()
    for args in ((), ("worker-1",)):
        code, out, err = cli(live_kubeconfig, *args)
        assert (code, out) == (2, "")
        assert err == (
            f"rte: error: noderesourcetopologies.topology.node.k8s.io: the apiserver at {fake_apiserver.url}"
            " does not serve topology.node.k8s.io/v1alpha2 noderesourcetopologies: the CRD is not installed"
            " (kubectl apply -f deploy/crd-noderesourcetopologies.yaml)\n"
        )


def test_an_unreachable_apiserver_is_one_line_and_exit_1(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path
) -> None:
    fake_apiserver.stop()
    code, out, err = cli(live_kubeconfig)
    assert (code, out) == (1, "")
    assert err == f"rte: error: cannot reach the apiserver at {fake_apiserver.url}: Connection refused\n"


def test_rbac_forbidden_is_one_line_naming_the_verb_and_the_resource(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path
) -> None:
    message = 'pods is forbidden: User "dev" cannot list resource "pods" in API group "" at the cluster scope'
    fake_apiserver.faults.fail_next(1, 403, message=message, reason="Forbidden", resource="pods")
    code, out, err = cli(live_kubeconfig, "worker-1")
    assert (code, out) == (1, "")
    assert err == f"rte: error: forbidden: cannot list pods (RBAC): {message}\n"
    # --no-fingerprint reads no node's pods, and with no heartbeat namespace not the agents' either.
    fake_apiserver.faults.fail_next(1, 403, message=message, reason="Forbidden", resource="pods")
    code, out, err = cli(live_kubeconfig, "worker-1", "--no-fingerprint", "--lease-namespace", "")
    assert (code, err) == (0, "") and out.splitlines()[1].split()[-2:] == ["-", "OK"]


def test_watch_redraws_each_interval_and_shows_a_failed_read_in_place_of_the_table(
    demo_api: FakeApiServer, open_demo: Opener
) -> None:
    now = [DEMO_NOW.timestamp()]
    screens: list[str] = []

    class Screen(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Screen()

    def sleep(seconds: float) -> None:
        now[0] += seconds
        screens.append(out.getvalue())
        if len(screens) == 1:  # the stopped agent comes back: its Lease is renewed
            demo_api.delete_object("leases", "worker-3", "rte")
            demo_api.create_object("leases", lease("worker-3", DEMO_NOW))
        else:
            demo_api.stop()

    top(
        open_demo,
        TopOptions(names=("worker-3",)),
        watch=True,
        interval=5,
        out=out,
        clock=lambda: now[0],
        sleep=sleep,
        iterations=3,
    )
    first, second, third = screens[0], screens[1][len(screens[0]) :], out.getvalue()[len(screens[1]) :]
    assert first.startswith(CLEAR_SCREEN + "Every 5s: rte top   ")
    assert first.splitlines()[3].split()[-3:] == ["3m5s", "match", "LeaseStale"]
    assert second.startswith(CLEAR_SCREEN)
    assert second.splitlines()[3].split()[-3:] == ["5s", "match", "OK"]  # renewed at DEMO_NOW, 5 s ago
    assert third.startswith(CLEAR_SCREEN)
    assert third.endswith(f"rte: error: cannot reach the apiserver at {demo_api.url}: Connection refused\n")


def test_watch_reads_lists_from_the_watch_cache_and_a_first_failure_ends_it(
    demo_api: FakeApiServer, open_demo: Opener
) -> None:
    demo_api.clear_requests()
    out = io.StringIO()
    top(open_demo, TopOptions(), watch=True, interval=1, out=out, sleep=lambda _: None, iterations=2)
    lists = [r for r in demo_api.requests if r.verb == "list"]
    assert lists and all(r.query.get("resourceVersion") == "0" for r in lists)
    assert CLEAR_SCREEN not in out.getvalue()  # not a terminal: screens follow each other
    demo_api.uninstall_crd()
    with pytest.raises(ConfigError):
        top(open_demo, TopOptions(), watch=True, interval=1, out=io.StringIO(), sleep=lambda _: None)


def test_watch_in_a_process_ends_quietly_on_interrupt(live_kubeconfig: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rte",
            "top",
            "--kubeconfig",
            str(live_kubeconfig),
            "--watch",
            "--interval",
            "200ms",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    seen = []
    while len([line for line in seen if line.startswith("Every 0.2s: rte top")]) < 2:
        line = proc.stdout.readline()
        assert line, "rte top --watch ended early"
        seen.append(line)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert (proc.returncode, err) == (0, "")
    assert any(line.startswith("worker-2   node-0") for line in seen)


def test_the_demo_cluster_keeps_its_running_agents_leases_fresh(
    demo_api: FakeApiServer, open_demo: Opener
) -> None:
    """Issue #24: the demo never renewed its Leases, so after 40 s every node was LeaseStale and
    the docs' tables no longer reproduced. An hour on, only the stopped agent's Lease is old."""
    later = DEMO_NOW + timedelta(hours=1)
    renew_heartbeats(demo_api, later)
    out = io.StringIO()
    top(open_demo, TopOptions(output="json"), out=out, clock=later.timestamp)
    by_node = {n["node"]: n for n in json.loads(out.getvalue())}
    assert {name: n["status"] for name, n in by_node.items()} == {
        "gpu-1": ["OK"],
        "worker-1": ["OK"],
        "worker-2": ["PodsMismatch"],
        "worker-3": ["LeaseStale"],
    }
    assert by_node["worker-1"]["lease"]["ageSeconds"] == pytest.approx(3, abs=1)


def test_the_documented_example_is_what_top_prints_on_the_demo_cluster(open_demo: Opener) -> None:
    """docs/operating.md's table was pasted from a run; only its ages (NRT-AGE, LEASE) depend on when."""
    readme = (REPO / "docs" / "operating.md").read_text(encoding="utf-8")
    pasted = readme.split("```\n$ rte top\n", 1)[1].split("```", 1)[0].splitlines()

    def without_ages(lines: list[str]) -> list[list[str]]:
        return [cells[:7] + cells[9:] for cells in (line.split() for line in lines)]

    assert without_ages(pasted) == without_ages(run_top(open_demo).splitlines())


def test_an_nrt_without_a_topology_manager_policy_shows_unknown_and_no_policy(
    fake_apiserver: FakeApiServer, live_kubeconfig: Path
) -> None:
    """Issue #28: an agent that could not read the kubelet config publishes no policy, which
    scheduler-plugins and KAI read as ``none``; top says it is unknown instead of hiding it."""
    from rte.testing.views_cluster import node, nrt

    fake_apiserver.create_object("nodes", node("blind-1", {"cpu": 8}))
    fake_apiserver.create_object("noderesourcetopologies", nrt("blind-1", [{"cpu": (8, 8)}], policy=None))
    code, out, err = cli(live_kubeconfig, "blind-1")
    assert (code, err) == (0, "")
    (line,) = out.splitlines()[1:]
    assert line.split()[6] == "unknown"
    assert line.split()[-1].split(",")[-1] == "NoPolicy"
    code, out, _ = cli(live_kubeconfig, "blind-1", "-o", "json")
    (shown,) = json.loads(out)
    assert shown["topologyManager"] is None and "NoPolicy" in shown["status"]
    code, out, _ = cli(live_kubeconfig, "worker-1")
    assert "NoPolicy" not in out and "single-numa-node/container" in out
