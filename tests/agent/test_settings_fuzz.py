"""Fuzzing settings files (``--config`` of rte run, rte extender and rte simulate) and durations.

A settings file gives settings or a one-line ``ConfigError`` naming the file and the key (or,
for a check across settings, the flag to change); a duration is a finite, non-negative number
of seconds or a one-line ``ValueError``. Budget and profiles: tests/conftest.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from rte.agent.settings import AGENT_SCHEMA, load_settings
from rte.durations import parse_duration
from rte.errors import ConfigError
from rte.extender.settings import EXTENDER_SCHEMA, resolve
from rte.settings.loader import as_dict, load
from rte.sim.scenario import SCENARIO_SCHEMA
from tests.helpers.fuzz import (
    deep_yaml_text,
    json_values,
    mutated,
    value_or_input_error,
    value_or_value_error,
)


def _agent(path: Path) -> Any:
    return load_settings(config_file=path, env={}, hostname=lambda: "node-1")


def _extender(path: Path) -> Any:
    return resolve(load(EXTENDER_SCHEMA, config_file=path, env={}))


def _simulate(path: Path) -> Any:
    return load(SCENARIO_SCHEMA, config_file=path, env={}).run_config()


LOADERS: dict[str, tuple[Any, Callable[[Path], Any]]] = {
    "agent": (AGENT_SCHEMA, _agent),
    "extender": (EXTENDER_SCHEMA, _extender),
    "simulate": (SCENARIO_SCHEMA, _simulate),
}
DEFAULTS = {name: as_dict(schema, load(schema, env={})) for name, (schema, _) in LOADERS.items()}


def _yaml(doc: Any) -> str:
    try:
        return yaml.safe_dump(doc)
    except (RecursionError, yaml.YAMLError):
        return "{}"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("settings")


@pytest.mark.parametrize("command", sorted(LOADERS))
@given(data=st.data())
@example(data=None)
def test_a_settings_file_is_settings_or_an_input_error_naming_the_file(
    scratch: Path, command: str, data: st.DataObject | None
) -> None:
    texts = st.one_of(
        mutated(DEFAULTS[command]).map(_yaml),
        st.sampled_from(sorted(DEFAULTS[command])).flatmap(
            lambda key: st.one_of(json_values, st.text(max_size=20)).map(lambda v: _yaml({key: v}))
        ),
        deep_yaml_text,
        st.text(max_size=60),
        st.sampled_from(
            sorted(DEFAULTS[command]),
        ).flatmap(
            lambda key: st.sampled_from([f"{key}: .nan", f"{key}: .inf", f"{key}: 1.0e+400", f"{key}: -.inf"])
        ),
        st.sampled_from(["poll_interval: 9" + "9" * 400 + "h", "nodes: 0x" + "f" * 5000, "\x00", "- a"]),
    )
    text = "workers: " + "9" * 500 if data is None else data.draw(texts, label="file")
    path = scratch / f"{command}.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _, read = LOADERS[command]
    value_or_input_error(lambda: read(path), (str(path), "--"))


@given(
    st.one_of(
        st.from_regex(r"\A([0-9]{0,400}(\.[0-9]{0,5})?(ns|us|µs|ms|s|m|h)){1,3}\Z"), st.text(max_size=20)
    )
)
@example("9" * 400 + "h")
@example("1" + "0" * 309 + "s")
def test_a_duration_is_finite_seconds_or_a_one_line_value_error(text: str) -> None:
    for bare in (False, True):
        seconds = value_or_value_error(lambda: parse_duration(text, bare_seconds=bare))  # noqa: B023
        if not isinstance(seconds, ValueError):
            assert math.isfinite(seconds) and seconds >= 0, seconds


@pytest.mark.parametrize("value", [".nan", ".inf", "1.0e+400", "999999999999"])
def test_a_seconds_setting_that_is_not_a_finite_length_of_time_is_refused_naming_the_key(
    tmp_path: Path, value: str
) -> None:
    # YAML's .nan passed every bound (NaN compares false), and .inf ran forever.
    path = tmp_path / "scenario.yaml"
    path.write_text(f"agent_interval: {value}\n")
    with pytest.raises(ConfigError, match=rf"^{path}: agent_interval: not a duration"):
        load(SCENARIO_SCHEMA, config_file=path, env={})


@pytest.mark.parametrize("text", ["9" * 400 + "h", "2562048h", "1" + "0" * 12 + "h"])
def test_a_duration_longer_than_go_allows_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="duration out of range"):
        parse_duration(text)
