"""The simulator's option languages: durations, bursts, node shapes, pod mixes, config checks."""

import pytest

from rte.durations import parse_duration
from rte.errors import InputError, SettingError
from rte.sim.config import SimConfig
from rte.sim.specs import (
    GiB,
    parse_burst,
    parse_node_shapes,
    parse_pod_mix,
    split_counts,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("1.5m", 90.0), ("500ms", 0.5), ("2h", 7200.0), ("7", 7.0), ("0", 0.0)],
)
def test_durations_read_with_or_without_a_unit(text: str, seconds: float) -> None:
    assert parse_duration(text, bare_seconds=True) == seconds


def test_a_burst_is_a_size_and_a_period() -> None:
    burst = parse_burst("200/1m")
    assert (burst.size, burst.period) == (200, 60.0)
    for bad in ("200", "x/10s", "0/10s", "5/0s"):
        with pytest.raises(InputError, match="--burst"):
            parse_burst(bad)


def test_the_brief_example_of_heterogeneous_node_shapes() -> None:
    (p1, a), (p2, b) = parse_node_shapes("70%:2x32c-192Gi,30%:4x16c-128Gi+nic4")
    assert (p1, a.zones, a.cpus_per_zone, a.memory_per_zone, dict(a.devices_per_zone)) == (
        70,
        2,
        32,
        96 * GiB,
        {},
    )
    assert (p2, b.zones, b.cpus_per_zone, b.memory_per_zone) == (30, 4, 16, 32 * GiB)
    assert dict(b.devices_per_zone) == {"example.com/nic": 4}


def test_zones_sit_on_sockets_one_each_unless_a_socket_count_is_given() -> None:
    (_, plain), (_, snc2) = parse_node_shapes("50%:4x16c2t-128Gi,50%:4x16c2t2s-128Gi")
    assert (plain.zones_per_socket, plain.threads_per_core) == (1, 2)
    assert (snc2.zones, snc2.zones_per_socket, snc2.threads_per_core, snc2.cpus_per_zone) == (4, 2, 2, 16)


def test_hugepages_are_counted_per_zone_in_nodes_and_in_gibibytes_per_container_in_pods() -> None:
    ((_, node),) = parse_node_shapes("2x8c-32Gi+hp4")
    assert node.hugepages_per_zone == 4
    ((_, pod),) = parse_pod_mix("2x2c-4Gi+hp1+gpu2")
    assert pod.containers == 2
    assert dict(pod.request) == {"cpu": 2, "memory": 4 * GiB, "hugepages-1Gi": GiB, "example.com/gpu": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("50%:2x8c-32Gi,40%:2x8c-32Gi", "add up to 90"),
        ("50%:2x8c-32Gi,2x8c-32Gi", "every entry needs a percentage"),
        ("2x8c", "does not read"),
        ("2x8c-lots", "memory 'lots' is not a quantity"),
        ("2x8c-32Gi+!!", "extra '!!'"),
        ("0x8c-32Gi", "zones must be within"),
        ("4x8c2t3s-32Gi", "3 sockets must be within 1..4 and divide 4 zones"),
        ("2x8c0s-32Gi", "0 sockets must be within"),
        # Counts beyond any machine used to run the simulator out of memory (a traceback) or time.
        ("64x100000c-1Gi", "at most 8,192 CPUs per node, got 6,400,000"),
        ("2x4c-1Gi+nic99999999999", "at most 1,024 devices of 'nic', got 99,999,999,999"),
    ],
)
def test_bad_node_shapes_give_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_node_shapes(text)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("--shape")


@pytest.mark.parametrize(
    "text",
    [
        "99999999999c-1Gi",
        "8193c-1Gi",
        "101x1c-1Mi",
        "100000x1c-1Mi",
        "1c-1Gi+gpu1025",
        "1c-1Gi+init99999999999c",
    ],
)
def test_a_pod_mix_beyond_any_machine_is_refused_before_the_simulation_runs(text: str) -> None:
    with pytest.raises(InputError, match=r"at most (100 containers|1,024 devices|8,192 CPUs)") as info:
        parse_pod_mix(text)
    assert str(info.value).startswith(f"--pod-mix {text!r}: ")
    assert parse_pod_mix("100x8192c-1Gi+gpu1024")  # the bounds themselves are fine


def test_nodes_are_split_by_largest_remainder() -> None:
    assert split_counts(10, (70.0, 30.0)) == [7, 3]
    assert split_counts(3, (50.0, 50.0)) == [2, 1]
    assert sum(split_counts(101, (33.3, 33.3, 33.4))) == 101


def test_config_rejects_unknown_modes_naming_the_field() -> None:
    with pytest.raises(SettingError, match="cache: 'lru'"):
        SimConfig(cache="lru")
    with pytest.raises(SettingError, match="policy"):
        SimConfig(policy="best-effort")
    with pytest.raises(SettingError, match="cache_resync_period: must be greater than 0"):
        SimConfig(cache_resync_period=0)
    with pytest.raises(SettingError, match="pod_mix"):
        SimConfig(pod_mix="four cpus")
    with pytest.raises(SettingError, match="reserved_cpus: 40 exceeds the 32 CPUs of a zone"):
        SimConfig(reserved_cpus=40)


def test_the_simulator_reads_durations_like_every_other_command() -> None:
    assert parse_duration("1m30s", bare_seconds=True) == 90.0
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("10 s", bare_seconds=True)


def test_a_node_shape_may_group_its_cpus_into_smt_cores() -> None:
    ((_, shape),) = parse_node_shapes("2x32c2t-192Gi")
    assert (shape.cpus_per_zone, shape.threads_per_core) == (32, 2)
    ((_, plain),) = parse_node_shapes("2x32c-192Gi")
    assert plain.threads_per_core == 1
    for bad in ("2x31c2t-8Gi", "2x8c9t-8Gi", "2x1.5c-8Gi", "2x8c-8Gi+init2c"):
        with pytest.raises(InputError, match="--shape"):
            parse_node_shapes(bad)


def test_a_pod_mix_may_add_init_containers_sidecars_fractional_and_burstable_pods() -> None:
    (_, init), (_, frac), (_, burst) = parse_pod_mix(
        "50%:4c-8Gi+init2c+sidecar1c-1Gi+nic1,30%:1.5c-1Gi,20%:2c-2Gi+burstable"
    )
    assert [(i.cpus, i.memory, i.sidecar) for i in init.inits] == [(2, 8 * GiB, False), (1, GiB, True)]
    assert init.request["example.com/nic"] == 1 and not init.burstable
    assert init.pod_cpus == 5  # the app container and the sidecar; the init container needs 2 + 0
    assert frac.request["cpu"] * 1000 == 1500
    assert burst.burstable and burst.inits == ()
    for bad in ("2c-1Gi+init", "0.0001c-1Gi", "2c2t-1Gi", "2c-1Gi+sidecarc"):
        with pytest.raises(InputError, match="--pod-mix"):
            parse_pod_mix(bad)


def test_old_pod_mixes_read_as_before() -> None:
    ((_, shape),) = parse_pod_mix("2x4c-8Gi+hp2+nic1")
    assert (shape.containers, shape.inits, shape.burstable) == (2, (), False)
    assert dict(shape.request) == {
        "cpu": 4,
        "memory": 8 * GiB,
        "hugepages-1Gi": 2 * GiB,
        "example.com/nic": 1,
    }
    assert type(shape.request["cpu"]) is int


def test_devices_on_several_zones_are_grouped_by_consecutive_zones() -> None:
    """``gpu1@2`` on 4 zones: groups {0,1} and {2,3}, one GPU each, attached to both zones; each
    zone lists it (as the kubelet lists a device once per NUMA node), the node counts it once."""
    from rte.sim.hardware import build_hardware

    ((_, shape),) = parse_node_shapes("4x4c-16Gi+gpu1+gpu1@2")
    assert shape.shared_devices == {"example.com/gpu": (1, 2)}
    hw = build_hardware(shape, policy="restricted", scope="container", reserved_cpus=0, reserved_memory=0)
    assert [len(row["example.com/gpu"]) for row in hw.zone_devices] == [2, 2, 2, 2]
    assert hw.node_allocatable["example.com/gpu"] == 6
    assert hw.device_zones == {"gpu-s0-0": (0, 1), "gpu-s2-0": (2, 3)}


@pytest.mark.parametrize(
    ("text", "message"),
    [("4x4c-16Gi+gpu1@3", "do not divide"), ("4x4c-16Gi+gpu1@1", "W >= 2"), ("4x4c-16Gi+gpu0@2", "N >= 1")],
)
def test_bad_devices_on_several_zones_give_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_node_shapes(text)


def test_a_pod_mix_cannot_ask_for_devices_on_several_zones() -> None:
    with pytest.raises(InputError, match="describe nodes"):
        parse_pod_mix("1c-1Gi+gpu1@2")
