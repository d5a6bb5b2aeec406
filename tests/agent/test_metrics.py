"""The agent's Prometheus series: names, types, labels and help kept, written by prometheus_client."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rte.agent.metrics import TAE_REASONS, AgentMetrics, Registry
from rte.runtime.metrics import Counter, Histogram, SnapshotGauge

# Every family the agent exposed before prometheus_client wrote the exposition: name -> (type,
# label names, help). Dashboards and alerts depend on these; none may change.
AGENT_FAMILIES = {
    "rte_agent_build_info": (
        "gauge",
        ("version", "python", "node"),
        "Always 1; labels carry the agent version.",
    ),
    "rte_agent_scan_duration_seconds": (
        "histogram",
        (),
        "Time to read the node and compute its NodeResourceTopology.",
    ),
    "rte_agent_publish_duration_seconds": (
        "histogram",
        (),
        "Time spent in one publish call (retries included).",
    ),
    "rte_agent_nrt_writes": (
        "counter",
        ("outcome",),
        "NodeResourceTopology publish decisions by outcome (skipped: content unchanged, no write).",
    ),
    "rte_agent_podresources_errors": (
        "counter",
        ("method", "kind"),
        "Failed kubelet podresources calls by method and kind.",
    ),
    "rte_agent_kubelet_polls": ("counter", (), "podresources List polls made."),
    "rte_agent_kubelet_changes": ("counter", (), "Polls whose List result differed from the previous one."),
    "rte_agent_triggers": ("counter", ("reason",), "Cycle triggers received by reason."),
    "rte_agent_cycles": ("counter", ("result",), "Cycles run, by result."),
    "rte_agent_cycle_errors": (
        "counter",
        ("cause",),
        "Failed cycles by cause (kubelet, input, apiserver, crd, ...).",
    ),
    "rte_agent_heartbeats": ("counter", ("result",), "Heartbeat Lease renewals by result."),
    "rte_agent_last_successful_publish_timestamp_seconds": (
        "gauge",
        (),
        "Unix time of the last publish that left the stored NRT equal to the computed one.",
    ),
    "rte_agent_ready": ("gauge", (), "1 when /readyz would answer 200."),
    "rte_agent_zone_available": (
        "gauge",
        ("zone", "resource"),
        "Available amount per zone and resource in the last computed object (CPUs, bytes, devices).",
    ),
    "rte_agent_findings": (
        "gauge",
        ("kind",),
        "Input inconsistencies handled by an accounting rule in the last computed object, by kind.",
    ),
}


def used_agent(registry: Registry | None = None) -> AgentMetrics:
    """Metrics with one sample in every labelled family, as after a few cycles."""
    m = AgentMetrics("n1", "0.1.0", registry)
    m.scan_seconds.observe(0.01)
    m.publish_seconds.observe(0.02)
    m.podresources_errors.inc(method="List", kind="unavailable")
    m.triggers.inc(reason="kubelet")
    m.cycles.inc(result="ok")
    m.cycle_errors.inc(cause="apiserver")
    m.heartbeats.inc(result="ok")
    m.record_zones([("node-0", "cpu", 10)])
    m.record_findings(["memory-block-split"])
    return m


Sample = tuple[str, dict[str, str], float]


def families(text: str) -> dict[str, tuple[str, tuple[str, ...], str, list[Sample]]]:
    """Parsed exposition: family name -> (type, sorted label names, help, samples)."""
    out = {}
    for family in text_string_to_metric_families(text):
        labels: tuple[str, ...] = ()
        for sample in family.samples:
            labels = tuple(sorted(k for k in sample.labels if k != "le"))
            break
        samples = [(s.name, dict(s.labels), s.value) for s in family.samples]
        out[family.name] = (family.type, labels, family.documentation, samples)
    return out


def test_every_series_keeps_its_name_type_labels_and_help() -> None:
    exposed = families(used_agent().registry.expose())
    for name, (kind, labels, help_text) in AGENT_FAMILIES.items():
        assert name in exposed, name
        assert exposed[name][:3] == (kind, tuple(sorted(labels)), help_text), name


def test_the_process_metrics_come_with_the_agents_own_series() -> None:
    exposed = families(AgentMetrics("n1", "0.1.0").registry.expose())
    for name in ("process_resident_memory_bytes", "process_cpu_seconds", "process_open_fds", "python_info"):
        assert name in exposed, name
    (_, _, _, samples) = exposed["process_resident_memory_bytes"]
    assert samples[0][2] > 1024 * 1024


def test_two_agents_in_one_process_keep_separate_registries() -> None:
    a, b = AgentMetrics("a", "0.1.0"), AgentMetrics("b", "0.1.0")
    a.polls.inc()
    a.polls.inc()
    assert a.polls.value() == 2 and b.polls.value() == 0
    assert 'node="a"' in a.registry.expose() and 'node="a"' not in b.registry.expose()


def test_an_unlabelled_series_is_exposed_as_zero_before_its_first_use() -> None:
    exposed = families(AgentMetrics("n1", "0.1.0").registry.expose())
    assert exposed["rte_agent_kubelet_polls"][3] == [("rte_agent_kubelet_polls_total", {}, 0.0)]


def test_every_write_outcome_and_admission_error_reason_is_exposed_at_zero_from_the_start() -> None:
    exposed = families(AgentMetrics("n1", "0.1.0").registry.expose())
    outcomes = {s[1]["outcome"]: s[2] for s in exposed["rte_agent_nrt_writes"][3]}
    assert outcomes == dict.fromkeys(("created", "patched", "skipped", "recreated", "failed"), 0.0)
    tae = exposed["rte_agent_topology_affinity_errors"]
    assert tae[0] == "counter" and tae[1] == ("reason",)
    assert {s[1]["reason"]: s[2] for s in tae[3]} == dict.fromkeys(TAE_REASONS, 0.0)
    assert "TopologyAffinityError" in TAE_REASONS


def test_no_created_series_double_the_counters() -> None:
    text = used_agent().registry.expose()
    assert "_created" not in text


def test_a_snapshot_gauge_is_replaced_whole_so_vanished_zones_disappear() -> None:
    m = AgentMetrics("n1", "0.1.0")
    m.record_zones([("node-0", "cpu", 10), ("node-1", "cpu", 12)])
    m.record_zones([("node-0", "cpu", 8)])
    samples = families(m.registry.expose())["rte_agent_zone_available"][3]
    assert samples == [("rte_agent_zone_available", {"zone": "node-0", "resource": "cpu"}, 8.0)]
    assert m.zone_available.value(zone="node-0", resource="cpu") == 8
    with pytest.raises(ValueError):
        m.zone_available.replace_all({("node-0",): 1.0})


def test_help_and_label_values_are_escaped() -> None:
    r = Registry()
    g = SnapshotGauge(r, "rte_x", 'Back\\slash and\nnewline "quoted".', ("path",))
    g.replace_all({('C:\\dir\n"name"',): 1})
    text = r.expose()
    assert '# HELP rte_x Back\\\\slash and\\nnewline "quoted".\n' in text
    assert 'rte_x{path="C:\\\\dir\\n\\"name\\""} 1.0\n' in text
    ((_, _, doc, samples),) = families(text).values()
    assert doc == 'Back\\slash and\nnewline "quoted".' and samples[0][1] == {"path": 'C:\\dir\n"name"'}


def test_histograms_have_cumulative_inclusive_le_buckets_sum_and_count() -> None:
    r = Registry()
    h = Histogram(r, "rte_latency_seconds", "Latency.", ("op",), buckets=(0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        h.observe(value, op="scan")
    ((_, _, _, samples),) = families(r.expose()).values()
    by_name = {(name, labels.get("le")): value for name, labels, value in samples}
    assert by_name[("rte_latency_seconds_bucket", "0.1")] == 2  # le is inclusive
    assert by_name[("rte_latency_seconds_bucket", "1.0")] == 3
    assert by_name[("rte_latency_seconds_bucket", "+Inf")] == 4
    assert by_name[("rte_latency_seconds_sum", None)] == pytest.approx(3.65)
    assert h.count(op="scan") == 4


def test_wrong_labels_and_decreasing_counters_are_programming_errors() -> None:
    r = Registry()
    c = Counter(r, "rte_c_total", "C.", ("a",))
    with pytest.raises(ValueError):
        c.inc(b="x")
    with pytest.raises(ValueError):
        c.inc(-1, a="x")
    with pytest.raises(ValueError):
        c.inc()
    with pytest.raises(ValueError):
        Counter(r, "rte_c_total", "again")
    with pytest.raises(ValueError):
        Histogram(r, "rte_h", "H.", ("le",))
