"""The Prometheus text exposition we write ourselves, checked line by line."""

from __future__ import annotations

import math

import pytest

from rte.agent.metrics import AgentMetrics, Registry, format_value


def test_counters_and_gauges_render_help_type_and_sorted_labelled_samples() -> None:
    r = Registry()
    c = r.counter("rte_things_total", "Things seen.", ("kind",))
    g = r.gauge("rte_level", "A level.")
    c.inc(kind="b")
    c.inc(2, kind="a")
    g.set(0.25)
    assert r.expose() == (
        "# HELP rte_things_total Things seen.\n"
        "# TYPE rte_things_total counter\n"
        'rte_things_total{kind="a"} 2\n'
        'rte_things_total{kind="b"} 1\n'
        "# HELP rte_level A level.\n"
        "# TYPE rte_level gauge\n"
        "rte_level 0.25\n"
    )


def test_an_unlabelled_series_is_exposed_as_zero_before_its_first_use() -> None:
    r = Registry()
    r.counter("rte_polls_total", "Polls.")
    assert "rte_polls_total 0\n" in r.expose()


def test_help_and_label_values_are_escaped() -> None:
    r = Registry()
    g = r.gauge("rte_x", 'Back\\slash and\nnewline "quoted".', ("path",))
    g.set(1, path='C:\\dir\n"name"')
    text = r.expose()
    assert '# HELP rte_x Back\\\\slash and\\nnewline "quoted".\n' in text
    assert 'rte_x{path="C:\\\\dir\\n\\"name\\""} 1\n' in text


def test_histograms_have_cumulative_le_buckets_sum_and_count() -> None:
    r = Registry()
    h = r.histogram("rte_latency_seconds", "Latency.", ("op",), buckets=(0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        h.observe(value, op="scan")
    assert r.expose().splitlines()[2:] == [
        'rte_latency_seconds_bucket{op="scan",le="0.1"} 2',  # le is inclusive
        'rte_latency_seconds_bucket{op="scan",le="1"} 3',
        'rte_latency_seconds_bucket{op="scan",le="+Inf"} 4',
        'rte_latency_seconds_sum{op="scan"} 3.65',
        'rte_latency_seconds_count{op="scan"} 4',
    ]
    assert h.count(op="scan") == 4


@pytest.mark.parametrize(
    ("value", "text"),
    [(3.0, "3"), (0.5, "0.5"), (math.inf, "+Inf"), (-math.inf, "-Inf"), (math.nan, "NaN"), (1e20, "1e+20")],
)
def test_values_print_like_prometheus_expects(value: float, text: str) -> None:
    assert format_value(value) == text


def test_wrong_labels_and_decreasing_counters_are_programming_errors() -> None:
    r = Registry()
    c = r.counter("rte_c_total", "C.", ("a",))
    with pytest.raises(ValueError):
        c.inc(b="x")
    with pytest.raises(ValueError):
        c.inc(-1, a="x")
    with pytest.raises(ValueError):
        r.counter("rte_c_total", "again")
    with pytest.raises(ValueError):
        r.histogram("rte_h", "H.", ("le",))


def test_a_gauge_set_can_be_replaced_whole_so_vanished_zones_disappear() -> None:
    r = Registry()
    m = AgentMetrics("n1", "0.1.0", r)
    m.record_zones([("node-0", "cpu", 10), ("node-1", "cpu", 12)])
    m.record_zones([("node-0", "cpu", 8)])
    text = r.expose()
    assert 'rte_agent_zone_available{zone="node-0",resource="cpu"} 8\n' in text
    assert 'zone="node-1"' not in text


def test_the_agent_exposes_every_write_outcome_and_its_build() -> None:
    r = Registry()
    AgentMetrics("n1", "0.1.0", r)
    text = r.expose()
    for outcome in ("created", "patched", "skipped", "recreated", "failed"):
        assert f'rte_agent_nrt_writes_total{{outcome="{outcome}"}} 0\n' in text
    assert 'rte_agent_build_info{version="0.1.0",python="' in text
    assert "# TYPE rte_agent_scan_duration_seconds histogram\n" in text
    # Every sample line is "name{labels} value" or "name value", every family has HELP and TYPE.
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE")]
    assert len(families) == len(set(families))
    assert sum(1 for line in text.splitlines() if line.startswith("# HELP")) == len(families)
