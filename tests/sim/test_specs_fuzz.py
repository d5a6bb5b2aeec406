"""Fuzzing the simulator's small languages (``--shape``, ``--pod-mix``, ``--burst``): a value
within the bounds the simulator can run, or a one-line ``InputError`` naming the option.
Budget and profiles: tests/conftest.py."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from rte.sim.specs import (
    MAX_CONTAINERS,
    MAX_DEVICES,
    MAX_NODE_CPUS,
    parse_burst,
    parse_node_shapes,
    parse_pod_mix,
)
from tests.helpers.fuzz import value_or_input_error

_NUMBER = r"[0-9]{1,14}"
entry_like = st.from_regex(
    rf"\A({_NUMBER}(\.[0-9]{{0,3}})?%:)?({_NUMBER}x)?{_NUMBER}c-{_NUMBER}(Gi|Mi|Ti|k|)(\+(hp|nic|gpu){_NUMBER}){{0,3}}\Z",
    fullmatch=True,
)
specs = st.one_of(
    st.lists(entry_like, min_size=1, max_size=3).map(",".join),
    st.text(max_size=40),
    st.from_regex(rf"\A{_NUMBER}/{_NUMBER}(ms|s|m|h|)\Z", fullmatch=True),
)


@given(specs)
@example("64x100000c-1Gi")
@example("2x4c-1Gi+nic99999999999")
def test_a_node_shape_is_within_bounds_or_a_one_line_error_naming_the_option(text: str) -> None:
    shapes = value_or_input_error(lambda: parse_node_shapes(text), "--shape")
    if isinstance(shapes, tuple):
        for _, shape in shapes:
            assert shape.zones * shape.cpus_per_zone <= MAX_NODE_CPUS
            assert all(n <= MAX_DEVICES for n in shape.devices_per_zone.values())


@given(specs)
@example("99999999999c-1Gi")
@example("100000x1c-1Mi")
def test_a_pod_mix_is_within_bounds_or_a_one_line_error_naming_the_option(text: str) -> None:
    mix = value_or_input_error(lambda: parse_pod_mix(text), "--pod-mix")
    if isinstance(mix, tuple):
        for _, shape in mix:
            assert shape.containers <= MAX_CONTAINERS
            assert shape.request["cpu"] <= MAX_NODE_CPUS


@given(specs)
def test_a_burst_is_a_value_or_a_one_line_error_naming_the_option(text: str) -> None:
    value_or_input_error(lambda: parse_burst(text), "--burst")
