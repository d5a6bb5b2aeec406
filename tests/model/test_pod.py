from fractions import Fraction
from typing import Any

import pytest

from rte.errors import InputError
from rte.model.exclusive import is_exclusive, is_native_resource
from rte.model.pod import (
    QOS_BEST_EFFORT,
    QOS_BURSTABLE,
    QOS_GUARANTEED,
    Container,
    Pod,
    effective_request,
    kubelet_pod_request,
    pod_from_manifest,
)


def _c(
    name: str, requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": name, "resources": res, **extra}


def _pod(
    containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": containers, "initContainers": init or [], **spec},
    }


GUARANTEED = {"cpu": "2", "memory": "1Gi"}


def test_limits_default_requests_like_the_apiserver() -> None:
    pod = pod_from_manifest(_pod([_c("a", limits=GUARANTEED)]))
    assert pod.containers[0].requests == {"cpu": 2, "memory": 2**30}
    assert pod.qos_class == QOS_GUARANTEED


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([_c("a")], QOS_BEST_EFFORT),
        ([_c("a", requests={"example.com/dev": "1"}, limits={"example.com/dev": "1"})], QOS_BEST_EFFORT),
        ([_c("a", requests={"cpu": "1"})], QOS_BURSTABLE),
        (
            [_c("a", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "2", "memory": "1Gi"})],
            QOS_BURSTABLE,
        ),
        ([_c("a", limits=GUARANTEED), _c("b", requests={"cpu": "1"})], QOS_BURSTABLE),
        ([_c("a", limits=GUARANTEED), _c("b", limits={"cpu": "500m", "memory": "10Mi"})], QOS_GUARANTEED),
        ([_c("a", limits={"cpu": "2"})], QOS_BURSTABLE),
    ],
)
def test_qos_class_follows_kubernetes(containers: list[dict[str, Any]], qos: str) -> None:
    assert pod_from_manifest(_pod(containers)).qos_class == qos


def test_status_qos_class_wins_when_present() -> None:
    obj = _pod([_c("a")])
    obj["status"] = {"qosClass": "Guaranteed", "phase": "Running"}
    pod = pod_from_manifest(obj)
    assert pod.qos_class == QOS_GUARANTEED
    assert pod.phase == "Running"


def test_effective_request_is_max_of_app_sum_and_init_max_plus_overhead() -> None:
    pod = pod_from_manifest(
        _pod(
            [_c("a", limits={"cpu": "2", "memory": "1Gi"}), _c("b", limits={"cpu": "1", "memory": "1Gi"})],
            init=[_c("i", limits={"cpu": "4", "memory": "1Gi"})],
            overhead={"cpu": "250m"},
        )
    )
    assert effective_request(pod) == {"cpu": Fraction(17, 4), "memory": 2 * 2**30}


def test_kubelet_pod_request_accumulates_sidecars_unlike_the_reference() -> None:
    pod = pod_from_manifest(
        _pod(
            [_c("app", limits={"cpu": "2", "memory": "1Gi"})],
            init=[
                _c("side", limits={"cpu": "1", "memory": "1Gi"}, restartPolicy="Always"),
                _c("init", limits={"cpu": "3", "memory": "1Gi"}),
            ],
        )
    )
    assert pod.sidecars[0].name == "side"
    assert effective_request(pod) == {"cpu": 3, "memory": 2**30}
    assert kubelet_pod_request(pod) == {"cpu": 4, "memory": 2 * 2**30}


@pytest.mark.parametrize(
    ("obj", "where"),
    [
        (_pod([_c("a", requests={"cpu": "lots"})]), "pod.yaml: spec.containers[0].resources.requests.cpu"),
        (_pod([_c("a", limits=["cpu"])]), "pod.yaml: spec.containers[0].resources.limits"),
        ({"kind": "Service", "metadata": {"name": "x"}}, "pod.yaml: kind"),
        ({"kind": "Pod", "metadata": {}}, "pod.yaml: metadata.name"),
        (_pod("notalist"), "pod.yaml: spec.containers"),  # type: ignore[arg-type]
        (_pod([]), "pod.yaml: spec.containers"),
        ({"kind": "Pod", "metadata": {"name": "x"}}, "pod.yaml: spec.containers"),
        (_pod([_c("a", requests={"cpu": "-1"})]), "pod.yaml: spec.containers[0].resources.requests.cpu"),
        (_pod([_c("a", limits={"memory": "-1Gi"})]), "pod.yaml: spec.containers[0].resources.limits.memory"),
        (
            _pod([_c("a")], init=[_c("i", requests={"cpu": "-500m"})]),
            "pod.yaml: spec.initContainers[0].resources.requests.cpu",
        ),
        (_pod([_c("a")], overhead={"cpu": "-1"}), "pod.yaml: spec.overhead.cpu"),
        (_pod([_c("a")], resources={"requests": {"cpu": -2}}), "pod.yaml: spec.resources.requests.cpu"),
    ],
)
def test_bad_manifests_name_the_field(obj: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as info:
        pod_from_manifest(obj, source="pod.yaml")
    assert info.value.source == where


NRT_NAMES = {"cpu", "memory", "example.com/nic"}


@pytest.mark.parametrize(
    ("containers", "init", "exclusive"),
    [
        ([_c("a", limits={"cpu": "2", "memory": "1Gi"})], [], True),
        # fractional CPU: still exclusive through memory (the common case the reference agent misses)
        ([_c("a", limits={"cpu": "1500m", "memory": "1Gi"})], [], True),
        ([_c("a", requests={"cpu": "2", "memory": "1Gi"})], [], False),  # Burstable
        ([_c("a")], [], False),
        # a device listed in the NRT is exclusive whatever the QoS
        ([_c("a", requests={"example.com/nic": "1"}, limits={"example.com/nic": "1"})], [], True),
        # ...but not a device the NRT does not list
        ([_c("a", requests={"other.com/x": "1"}, limits={"other.com/x": "1"})], [], False),
        # regular init containers are skipped, sidecars are not
        ([_c("a", requests={"cpu": "100m"})], [_c("i", requests={"example.com/nic": "1"})], False),
        (
            [_c("a", requests={"cpu": "100m"})],
            [_c("s", requests={"example.com/nic": "1"}, restartPolicy="Always")],
            True,
        ),
        # kubernetes.io/ names are native: the QoS gate applies
        ([_c("a", requests={"kubernetes.io/batch-cpu": "1"})], [], False),
    ],
)
def test_exclusivity_follows_the_scheduler_rules(
    containers: list[dict[str, Any]], init: list[dict[str, Any]], exclusive: bool
) -> None:
    assert is_exclusive(pod_from_manifest(_pod(containers, init=init)), NRT_NAMES) is exclusive


def test_guaranteed_pod_with_only_fractional_cpu_and_hugepages_is_exclusive() -> None:
    pod = pod_from_manifest(_pod([_c("a", limits={"cpu": "500m", "memory": "0", "hugepages-2Mi": "2Mi"})]))
    # memory limit 0 means "no limit", so this is Burstable... unless we build it as Guaranteed by status
    pod_g = pod_from_manifest(
        {
            **_pod([_c("a", limits={"cpu": "500m", "hugepages-2Mi": "2Mi"})]),
            "status": {"qosClass": "Guaranteed"},
        }
    )
    assert not is_exclusive(pod, NRT_NAMES)
    assert is_exclusive(pod_g, NRT_NAMES)


def test_native_resource_names() -> None:
    assert is_native_resource("cpu")
    assert is_native_resource("hugepages-1Gi")
    assert is_native_resource("requests.kubernetes.io/foo")
    assert not is_native_resource("nvidia.com/gpu")


def test_pod_level_resources_are_read_with_requests_defaulted_from_limits() -> None:
    p = pod_from_manifest(
        {
            "metadata": {"name": "p"},
            "spec": {
                "resources": {"limits": {"cpu": "4", "memory": "4Gi"}, "requests": {"cpu": "2"}},
                "containers": [{"name": "c"}],
            },
        }
    )
    assert p.resources is not None and p.resources.is_set
    assert p.resources.requests == {"cpu": 2, "memory": 4 * 2**30}
    assert p.resources.limits == {"cpu": 4, "memory": 4 * 2**30}


def test_pod_level_resources_alone_decide_the_qos_class() -> None:
    def level(resources: dict[str, object]) -> str:
        manifest = {
            "metadata": {"name": "p"},
            "spec": {
                "resources": resources,
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        return pod_from_manifest(manifest).qos_class

    assert level({"limits": {"cpu": "4", "memory": "4Gi"}}) == QOS_GUARANTEED
    assert level({"requests": {"cpu": "1"}, "limits": {"cpu": "4", "memory": "4Gi"}}) == QOS_BURSTABLE
    assert level({"requests": {"ephemeral-storage": "1Gi"}}) == QOS_BEST_EFFORT


def test_pod_level_resources_without_cpu_memory_or_hugepages_are_not_set() -> None:
    containers = [{"name": "c"}]
    p = pod_from_manifest(
        {
            "metadata": {"name": "p"},
            "spec": {"containers": containers, "resources": {"limits": {"ephemeral-storage": "1Gi"}}},
        }
    )
    assert p.resources is not None and not p.resources.is_set
    empty = {"metadata": {"name": "p"}, "spec": {"containers": containers, "resources": {}}}
    assert pod_from_manifest(empty).resources is None


def test_the_kubelet_aligns_a_pod_without_its_overhead() -> None:
    pod = Pod(
        "ns",
        "p",
        containers=(Container("c", {"cpu": 2}, {"cpu": 2}),),
        overhead={"cpu": 1},
    )
    assert kubelet_pod_request(pod) == {"cpu": 3}
    assert kubelet_pod_request(pod, overhead=False) == {"cpu": 2}
