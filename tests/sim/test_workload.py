"""The pods a pod mix produces: init containers, sidecars, fractional and Burstable pods."""

from rte.model.pod import QOS_BURSTABLE, QOS_GUARANTEED, kubelet_pod_request
from rte.sim.specs import GiB, parse_pod_mix
from rte.sim.workload import mean_cpus, template_pod


def test_init_containers_and_sidecars_come_in_the_order_written() -> None:
    ((_, shape),) = parse_pod_mix("2x4c-8Gi+sidecar1c-1Gi+init2c")
    pod = template_pod(shape, "default-scheduler")
    assert [(c.name, c.requests["cpu"], c.is_sidecar) for c in pod.init_containers] == [
        ("sidecar0", 1, True),
        ("init1", 2, False),
    ]
    assert pod.init_containers[1].requests["memory"] == 8 * GiB  # the app container's by default
    assert pod.qos_class == QOS_GUARANTEED
    assert kubelet_pod_request(pod)["cpu"] == shape.pod_cpus == 9


def test_a_burstable_pod_has_cpu_limits_above_its_requests() -> None:
    ((_, shape),) = parse_pod_mix("2c-2Gi+init1c+burstable")
    pod = template_pod(shape, "default-scheduler")
    assert pod.qos_class == QOS_BURSTABLE
    assert all(c.limits["cpu"] == 2 * c.requests["cpu"] for c in pod.containers + pod.init_containers)


def test_the_mean_cpus_of_a_mix_count_what_the_scheduler_counts() -> None:
    assert mean_cpus(parse_pod_mix("50%:2x2c-1Gi,50%:1.5c-1Gi+sidecar1c")) == 0.5 * 4 + 0.5 * 2.5
