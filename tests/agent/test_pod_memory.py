"""What the agent keeps per pod is shared where pods are alike (docs/performance.md, "Agent memory").

An agent holds two views of every pod of its node (the kubelet's ``PodResources`` and the
apiserver's ``Pod``) plus the pod tally's facts; at 5000 pods each empty set, empty map or
repeated string made per pod was kilobytes per pod. These tests pin the sharing down: each
fails when the value is built anew per pod, though the values stay equal either way.
"""

from __future__ import annotations

import json
from typing import Any

from rte.agent.compute.podtally import PodTally, pod_facts
from rte.model import fingerprint as fp
from rte.model.pod import NO_QUANTITIES, pod_from_manifest
from rte.model.vocabulary import FingerprintMethod
from rte.podres import convert
from rte.podres.types import NO_CPUS
from rte.testing import scenarios


def _manifest(name: str) -> dict[str, Any]:
    # Decoded from JSON text each time, as the pod watch gets them: no string is shared yet.
    return json.loads(  # type: ignore[no-any-return]
        json.dumps(
            {
                "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}"},
                "spec": {
                    "nodeName": "worker-1",
                    "containers": [
                        {"name": "app", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                    ],
                },
                "status": {"phase": "Running", "qosClass": "Burstable"},
            }
        )
    )


def test_pods_from_manifests_share_empty_maps_quantities_and_repeated_strings() -> None:
    a, b = pod_from_manifest(_manifest("a")), pod_from_manifest(_manifest("b"))
    assert a.overhead is b.overhead is NO_QUANTITIES
    assert a.containers[0].limits is NO_QUANTITIES
    assert a.containers[0].requests == {"cpu": b.containers[0].requests["cpu"], "memory": 128 * 2**20}
    assert a.containers[0].requests["cpu"] is b.containers[0].requests["cpu"]
    for field in ("namespace", "node_name", "phase", "status_qos_class"):
        assert getattr(a, field) is getattr(b, field), field
    assert a.containers[0].name is b.containers[0].name


def test_an_empty_quantity_map_read_from_a_manifest_is_still_a_fresh_value_for_pod_level_resources() -> None:
    # spec.resources is None when empty; a set one keeps its own maps (requests defaulted from limits).
    manifest = _manifest("c")
    manifest["spec"]["resources"] = {"limits": {"cpu": "1"}}
    pod = pod_from_manifest(manifest)
    assert pod.resources is not None and dict(pod.resources.requests) == dict(pod.resources.limits)


def test_listed_pods_without_exclusive_cpus_or_devices_share_one_empty_set() -> None:
    listing = (
        scenarios.pod("team-a", "a", scenarios.container("app")),
        scenarios.pod("team-a", "b", scenarios.container("app")),
    )
    a, b = (convert.pod_from_proto(p, "test") for p in listing)
    assert a.cpu_ids is b.cpu_ids is NO_CPUS
    assert a.containers[0].cpu_ids is NO_CPUS
    assert a.namespace is b.namespace
    assert a.containers is b.containers, "containers that hold nothing are shared"
    fa, fb = pod_facts(a), pod_facts(b)
    assert fa.cpus is fb.cpus is NO_CPUS
    assert fa.devices is fb.devices and not fa.devices


def test_listed_cpus_are_still_read_when_there_are_some() -> None:
    pod = convert.pod_from_proto(scenarios.pod("ns", "p", scenarios.container("app", [3, 4])), "test")
    assert pod.containers[0].cpu_ids == {3, 4}
    assert pod_facts(pod).cpus == {3, 4}


def test_the_tally_keeps_facts_only_for_pods_that_hold_something() -> None:
    plain = [
        convert.pod_from_proto(scenarios.pod("team-a", f"p{i}", scenarios.container("app")), "t")
        for i in range(20)
    ]
    pinned = convert.pod_from_proto(scenarios.pod("ns", "pinned", scenarios.container("app", [3, 4])), "t")
    tally = PodTally()
    tally.sync((*plain, pinned))
    assert tally.facts_kept == 1 and tally.clean
    tally.sync((*plain[1:], pinned, plain[0], plain[0]))  # one of nothing listed twice
    assert not tally.clean
    tally.sync(tuple(plain))
    assert tally.clean and tally.facts_kept == 0 and len(tally.listed_keys()) == 20
    assert tally.fingerprint(FingerprintMethod.ALL) == (
        tuple(sorted(("team-a", f"p{i}") for i in range(20))),
        fp.compute(("team-a", f"p{i}") for i in range(20)),
    )


def test_the_listed_pods_name_is_the_pod_watchs_string() -> None:
    from rte.agent.watch.podwatch import NodePodWatch

    listed = convert.pod_from_proto(
        scenarios.pod("team-a", "web-7f9c6d5b8-x2k4q", scenarios.container("app")), "t"
    )
    watch = NodePodWatch(None, "worker-1")
    manifest = _manifest("web-7f9c6d5b8-x2k4q")
    read = watch._pod(manifest)
    assert read is not None
    (namespace, name), _ = read
    assert name == listed.name and name is listed.name
    assert namespace is listed.namespace
