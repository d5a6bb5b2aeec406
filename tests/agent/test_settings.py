"""Agent settings: layering, durations, validation messages, --dump-config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rte.agent.settings import AGENT_SCHEMA, AgentSettings, dump_settings, load_settings
from rte.cli import main
from rte.durations import format_duration, parse_duration
from rte.errors import ConfigError
from rte.model.vocabulary import FingerprintMethod, InformerMode


def load(**kwargs: object) -> AgentSettings:
    kwargs.setdefault("env", {})
    return load_settings(hostname=lambda: "Host-1", **kwargs)  # type: ignore[arg-type]


def test_defaults_need_nothing_but_a_host_name() -> None:
    s = load()
    assert s.node_name == "host-1"  # lower-cased: object names are DNS subdomains
    assert s.poll_interval == 0.5
    assert s.resync_interval == 60.0
    assert s.sysfs_root == Path("/sys")
    assert s.kubelet_config is None
    assert s.origin("poll_interval") == "default"


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    config = tmp_path / "rte.yaml"
    config.write_text("poll_interval: 2s\nresync_interval: 5m\nlog_level: debug\nnode_name: from-file\n")
    s = load(
        config_file=config,
        env={"RTE_RESYNC_INTERVAL": "90s", "NODE_NAME": "from-env", "RTE_LOG_LEVEL": "warning"},
        flags={"log_level": "error", "poll_interval": None},
    )
    assert s.poll_interval == 2.0  # file
    assert s.resync_interval == 90.0  # env over file
    assert s.node_name == "from-env"  # NODE_NAME over file
    assert s.log_level == "error"  # flag over env
    assert s.origin("resync_interval") == "RTE_RESYNC_INTERVAL"
    assert s.origin("poll_interval") == f"{config}: poll_interval"
    assert s.origin("log_level") == "--log-level"


def test_rte_node_name_beats_the_downward_api_variable() -> None:
    s = load(env={"NODE_NAME": "downward", "RTE_NODE_NAME": "explicit"})
    assert s.node_name == "explicit"


def test_the_config_file_can_come_from_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("debounce: 20ms\n")
    assert load(env={"RTE_CONFIG": str(config)}).debounce == pytest.approx(0.02)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("500ms", 0.5),
        ("60s", 60.0),
        ("1m", 60.0),
        ("1m30s", 90.0),
        ("1.5h", 5400.0),
        ("250us", 0.00025),
    ],
)
def test_durations_use_go_syntax(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "fast", "10", "-1s", "1 s", "5d", "s"])
def test_malformed_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.5, "500ms"), (60, "1m"), (90, "90s"), (3600, "1h"), (0, "0")]
)
def test_durations_print_in_their_shortest_exact_unit(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


def test_a_bad_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigError) as err:
        load(env={"RTE_POLL_INTERVAL": "fast"})
    assert str(err.value).startswith("RTE_POLL_INTERVAL: not a duration: 'fast'")


def test_a_bare_number_is_seconds_in_the_file_the_environment_and_a_flag(tmp_path: Path) -> None:
    """One duration syntax in every command (issue #24): `rte run --poll-interval 2` was refused."""
    config = tmp_path / "c.yaml"
    config.write_text("resync_interval: 60\n")
    assert load(config_file=config).resync_interval == 60.0
    assert load(env={"RTE_POLL_INTERVAL": "2"}).poll_interval == 2.0
    assert load(flags={"debounce": "0.2"}).debounce == 0.2


def test_unknown_keys_in_the_file_are_errors_with_a_hint(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("poll-interval: 1s\n")
    with pytest.raises(
        ConfigError, match=r"c.yaml: poll-interval: unknown setting \(did you mean 'poll_interval'\?\)"
    ):
        load(config_file=config)


def test_unknown_rte_environment_variables_are_ignored() -> None:
    # Kubernetes injects <SERVICE>_PORT variables; a Service named rte-... must not break startup.
    assert load(env={"RTE_METRICS_PORT": "tcp://10.0.0.1:8080"}).poll_interval == 0.5


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RTE_PUBLISH": "maybe"}, "RTE_PUBLISH: not a boolean: 'maybe'"),
        ({"RTE_KUBELET_BURST": "2.5"}, "RTE_KUBELET_BURST: not an integer: '2.5'"),
        (
            {"RTE_FINGERPRINT_METHOD": "some"},
            "RTE_FINGERPRINT_METHOD: 'some' is not one of all, with-exclusive-resources",
        ),
        ({"RTE_RESYNC_INTERVAL": "100ms"}, "RTE_RESYNC_INTERVAL: must be at least 1s"),
        ({"RTE_DEBOUNCE": "2s"}, "RTE_DEBOUNCE: 2s exceeds max_delay 1s"),
        ({"RTE_NODE_NAME": "Bad_Name"}, "RTE_NODE_NAME: 'Bad_Name' is not a valid object name"),
        ({"RTE_HTTP_ADDRESS": "localhost"}, "RTE_HTTP_ADDRESS: not host:port: 'localhost'"),
        ({"RTE_LEASE_DURATION": "500ms"}, "RTE_LEASE_DURATION: must be 0 (off) or at least 1s"),
        ({"RTE_KUBELET_QPS": "0"}, "RTE_KUBELET_QPS: must be at least 0.1"),
        (
            {"RTE_PODRESOURCES": "http://127.0.0.1:10250"},
            "RTE_PODRESOURCES: http://127.0.0.1:10250: unsupported scheme 'http:'",
        ),
        ({"RTE_PODRESOURCES": __file__}, f"RTE_PODRESOURCES: {__file__}: is a regular file"),
    ],
)
def test_invalid_values_are_one_line_errors_naming_the_key(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load(env=env)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_podresources_socket_that_is_not_there_yet_is_waited_for_not_refused() -> None:
    assert load(env={"RTE_PODRESOURCES": "unix:///nonexistent/kubelet.sock"}).podresources.endswith(".sock")


def test_empty_paths_turn_optional_inputs_off_and_lists_split_on_commas() -> None:
    s = load(env={"RTE_NOTIFY_FILE": "", "RTE_POD_EXCLUDE": "kube-system/*, monitoring/node-exporter-*"})
    assert s.notify_file is None
    assert s.pod_exclude == ("kube-system/*", "monitoring/node-exporter-*")


def test_the_informer_mode_and_the_method_read_any_case_and_print_one_spelling(tmp_path: Path) -> None:
    s = load(env={"RTE_INFORMER_MODE": "shared", "RTE_FINGERPRINT_METHOD": "ALL"})
    assert (s.informer_mode, s.fingerprint_method) == (InformerMode.SHARED, FingerprintMethod.ALL)
    dumped = yaml.safe_load(dump_settings(s))
    assert (dumped["informer_mode"], dumped["fingerprint_method"]) == ("Shared", "all")


def test_every_setting_has_a_docstring_an_env_name_and_a_flag() -> None:
    for info in AGENT_SCHEMA.fields:
        assert info.doc, info.name
        assert info.env == "RTE_" + info.name.upper()
        assert info.flag == "--" + info.name.replace("_", "-")


def test_dumped_settings_load_back_to_the_same_values(tmp_path: Path) -> None:
    original = load(
        env={"RTE_POLL_INTERVAL": "250ms", "RTE_POD_EXCLUDE": "a/b", "RTE_KUBELET_CONFIG": "/k.yaml"}
    )
    config = tmp_path / "dumped.yaml"
    config.write_text(dump_settings(original))
    assert load(config_file=config) == original
    assert "# from RTE_POLL_INTERVAL" in config.read_text()


def test_rte_run_dump_config_prints_the_effective_settings_as_yaml() -> None:
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--dump-config",
            "--node-name",
            "n1",
            "--poll-interval",
            "2s",
            "--no-pod-watch",
            "--sysfs",
            "/host/sys",
        ],
        env={"RTE_RESYNC_INTERVAL": "2m"},
    )
    assert result.exit_code == 0, result.output
    values = yaml.safe_load(result.stdout)
    assert values["node_name"] == "n1"
    assert values["poll_interval"] == "2s"
    assert values["resync_interval"] == "2m"
    assert values["pod_watch"] is False
    assert values["sysfs_root"] == "/host/sys"


def test_rte_run_reports_a_bad_flag_in_one_line_with_status_2() -> None:
    result = CliRunner().invoke(main, ["run", "--dump-config", "--poll-interval", "soon"])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "rte: error: --poll-interval: not a duration: 'soon' (e.g. '500ms', '60s', '5m')"
    )


def test_rte_run_dump_config_reads_back_through_config_to_the_same_settings(tmp_path: Path) -> None:
    args = [
        "run",
        "--node-name",
        "n1",
        "--poll-interval",
        "1m30s",
        "--debounce",
        "0.7s",
        "--pod-exclude",
        "kube-system/*",
        "--pod-exclude",
        "monitoring/*,logging/*",
        "--no-pod-watch",
        "--informer-mode",
        "SHARED",
        "--zone-load-band",
        "2.5",
        "--kubelet-config",
        "/etc/k.yaml",
    ]
    first = CliRunner().invoke(main, [*args, "--dump-config"], env={"RTE_RESYNC_INTERVAL": "2m"})
    assert first.exit_code == 0, first.output
    config = tmp_path / "agent.yaml"
    config.write_text(first.stdout, encoding="utf-8")
    second = CliRunner().invoke(main, ["run", "--config", str(config), "--dump-config"], env={})
    assert second.exit_code == 0, second.output
    assert yaml.safe_load(second.stdout) == yaml.safe_load(first.stdout)
    assert load(config_file=config) == load(
        env={"RTE_RESYNC_INTERVAL": "2m"},
        flags={
            "node_name": "n1",
            "poll_interval": "90s",
            "debounce": "0.7s",
            "pod_exclude": ("kube-system/*", "monitoring/*", "logging/*"),
            "pod_watch": False,
            "informer_mode": "shared",
            "zone_load_band": "2.5",
            "kubelet_config": "/etc/k.yaml",
        },
    )


@pytest.mark.parametrize("spelling", ["shared", "Shared", "SHARED"])
def test_choices_are_read_in_any_case_from_every_layer(tmp_path: Path, spelling: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"informer_mode: {spelling}\nlog_format: JSON\n")
    assert load(flags={"informer_mode": spelling}).informer_mode is InformerMode.SHARED
    assert load(env={"RTE_INFORMER_MODE": spelling}).informer_mode is InformerMode.SHARED
    from_file = load(config_file=config)
    assert (from_file.informer_mode, from_file.log_format) == (InformerMode.SHARED, "json")


@pytest.mark.parametrize(
    ("band", "message"),
    [
        ("500", "--zone-load-band: must be at most 100, got 500"),
        ("0", "--zone-load-band: must be greater than 0, got 0"),
    ],
)
def test_the_zone_load_band_is_a_percentage_above_zero(band: str, message: str) -> None:
    result = CliRunner().invoke(main, ["run", "--dump-config", "--zone-load-band", band])
    assert result.exit_code == 2
    assert result.stderr == f"rte: error: {message}\n"


def test_a_binary_config_file_is_one_line_with_status_2(tmp_path: Path) -> None:
    config = tmp_path / "settings.bin"
    config.write_bytes(bytes(range(256)) * 4)
    result = CliRunner().invoke(main, ["run", "--dump-config", "--config", str(config)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"rte: error: {config}: cannot read")
    assert result.stderr.count("\n") == 1


def test_rte_run_help_shows_each_settings_default_and_environment_variable() -> None:
    result = CliRunner().invoke(main, ["run", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "[default: 500ms; env: RTE_POLL_INTERVAL]" in text
    assert "[default: true; env: RTE_PUBLISH]" in text
    assert "--informer-mode [Dedicated|Shared]" in text
