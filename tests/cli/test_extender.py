"""``rte extender`` as a command: flag validation, and a real process serving NRT files until SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from rte.cli import extender_cmd, main
from rte.commands.options import setting_flags
from rte.consumer.config import (
    CacheConfig,
    CacheMode,
    ForeignPodsDetect,
    LoadAwareConfig,
    LoadMode,
    ResyncScope,
    StaleAction,
)
from rte.consumer.score import ScoringStrategy
from rte.extender.app import ExtenderApp
from rte.extender.settings import EXTENDER_SCHEMA, extender_settings, resolve
from rte.model.vocabulary import Compat, InformerMode
from rte.settings.loader import load
from tests.helpers.extender import GI, Client, nrt, pod
from tests.helpers.paths import REPO


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--strategy", "Best"], {}, "rte: error: --strategy: 'Best' is not one of MostAllocated"),
        ([], {"RTE_EXTENDER_STRATEGY": "Best"}, "rte: error: RTE_EXTENDER_STRATEGY: 'Best' is not one of"),
        (["--weight", "cpu=0"], {}, "rte: error: --weight: weight of cpu must be a positive integer, got 0"),
        (["--weight", "gpu"], {}, "rte: error: --weight: expected RESOURCE=WEIGHT, got 'gpu'"),
        (["--listen", "everywhere"], {}, "rte: error: --listen: expected HOST:PORT, got 'everywhere'"),
        (
            ["--cache-resync-period", "soon"],
            {},
            "rte: error: --cache-resync-period: not a duration: 'soon'",
        ),
        (["--resync-method", "Some"], {}, "rte: error: --resync-method: 'Some' is not one of Autodetect"),
        (
            ["--informer-mode", "private"],
            {},
            "rte: error: --informer-mode: 'private' is not one of Dedicated",
        ),
        (["--log-level", "loud"], {}, "rte: error: --log-level: 'loud' is not one of debug, info"),
        (["--nrt-file", "/nonexistent.yaml"], {}, "rte: error: /nonexistent.yaml: cannot read"),
        (["--resync-scope", "Some"], {}, "rte: error: --resync-scope: 'Some' is not one of All"),
        (
            ["--dirty-after-failures", "0"],
            {},
            "rte: error: --dirty-after-failures: must be at least 1, got 0",
        ),
        (["--dirty-after-failures", "x"], {}, "rte: error: --dirty-after-failures: not an integer: 'x'"),
        (["--startup-grace", "soon"], {}, "rte: error: --startup-grace: not a duration: 'soon'"),
        (["--absent-pod-grace", "-"], {}, "rte: error: --absent-pod-grace: not a duration: '-'"),
        (["--load-mode", "hot"], {}, "rte: error: --load-mode: 'hot' is not one of off, filter, score"),
        (["--load-threshold", "cpu"], {}, "rte: error: --load-threshold: expected ATTRIBUTE=PERCENT"),
        (["--load-threshold", "cpu=101"], {}, "rte: error: --load-threshold: expected ATTRIBUTE=PERCENT"),
        (["--load-score-factor", "2"], {}, "rte: error: --load-score-factor: must be at most 1, got 2"),
        ([], {"RTE_EXTENDER_LOAD_MODE": "hot"}, "rte: error: RTE_EXTENDER_LOAD_MODE: 'hot' is not one of"),
        (["--max-request-body", "lots"], {}, "rte: error: --max-request-body: expected a size such as 32Mi"),
        (["--max-request-body", "100"], {}, "rte: error: --max-request-body: must be at least 1Ki"),
    ],
)
def test_bad_settings_are_one_line_errors_with_exit_status_2(
    args: list[str], env: dict[str, str], message: str
) -> None:
    result = CliRunner().invoke(main, ["extender", "--listen", "127.0.0.1:0", *args], env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith(message)
    assert result.stderr.count("\n") == 1


def test_settings_mirror_the_reference_plugin_arguments() -> None:
    default = extender_settings()
    assert default.cache.mode is CacheMode.PASSTHROUGH  # cacheResyncPeriodSeconds 0, as upstream
    assert default.cache.config.foreign_pods_detect is ForeignPodsDetect.ALL
    assert (default.host, default.port) == ("0.0.0.0", 8888)
    assert default.strategy.type == "LeastAllocated"
    tuned = extender_settings(
        cache_resync_period="5s",
        foreign_pods_detect="OnlyExclusiveResources",
        informer_mode="Shared",
        scheduler_profiles=["a", "b"],
        weights=["cpu=3"],
        listen="[::1]:9000",
    )
    assert (tuned.cache.mode, tuned.cache.resync_period) == (CacheMode.OVER_RESERVE, 5.0)
    assert tuned.cache.config.informer_mode is InformerMode.SHARED
    assert tuned.cache.config.profiles == frozenset({"a", "b"})
    assert dict(tuned.strategy.weights) == {"cpu": 3, "memory": 1}
    assert (tuned.host, tuned.port) == ("::1", 9000)
    discard = extender_settings(cache_resync_period="5", discard_reserved=True)
    assert discard.cache.mode is CacheMode.DISCARD_RESERVED


def test_rte_s_additions_reach_the_cache_configuration() -> None:
    default = extender_settings().cache.config
    assert default == CacheConfig(), "every addition is off or at the reference's behaviour by default"
    tuned = extender_settings(
        resync_scope="OnlyResources",
        dirty_after_failures="3",
        absent_pod_grace="1m",
        follow_clean_nodes=False,
        stale_after="30s",
        stale_action="unschedulable",
        stale_if_no_heartbeat=True,
        startup_grace="2m",
        load_mode="score",
        load_thresholds=["memoryPressurePercent=90", "cpuUtilizationPercent=70"],
        load_score_factor="0.25",
        compat="REFERENCE",
    )
    config = tuned.cache.config
    assert config.resync_scope is ResyncScope.ONLY_RESOURCES
    assert (config.dirty_after_failures, config.absent_pod_grace, config.startup_grace) == (3, 60.0, 120.0)
    assert (config.follow_clean_nodes, config.stale_if_no_heartbeat) == (False, True)
    assert (config.heartbeat_max_age, config.stale_action) == (30.0, StaleAction.UNSCHEDULABLE)
    assert config.load == LoadAwareConfig(
        LoadMode.SCORE, {"memoryPressurePercent": 90, "cpuUtilizationPercent": 70}, 0.25
    )
    assert tuned.compat is Compat.REFERENCE
    assert extender_settings().compat is Compat.KUBELET, "the kubelet's rules by default"


def _busy_and_sidecar_files(tmp_path: Path) -> list[str]:
    hot = nrt("hot", [{"cpu": 8, "memory": 16 * GI}, {"cpu": 8, "memory": 16 * GI}], pods=[])
    hot["zones"][0]["attributes"] = [{"name": "cpuUtilizationPercent", "value": "95"}]
    cool = nrt("cool", [{"cpu": 8, "memory": 16 * GI}, {"cpu": 8, "memory": 16 * GI}], pods=[])
    solo = nrt("solo", [{"cpu": 4, "memory": 16 * GI}], pods=[])
    path = tmp_path / "nrts.yaml"
    path.write_text(yaml.safe_dump_all([hot, cool, solo]), encoding="utf-8")
    return [str(path)]


def _sidecar_pod() -> dict[str, object]:
    """A sidecar of 2 CPUs beside an app container of 3, on a node with one 4-CPU zone."""
    sidecar = pod("sc", {"cpu": 2, "memory": GI})["spec"]["containers"][0]  # type: ignore[index]
    sidecar.update(name="proxy", restartPolicy="Always")
    manifest = pod("sc", {"cpu": 3, "memory": GI})
    manifest["spec"]["initContainers"] = [sidecar]  # type: ignore[index]
    return manifest


@pytest.mark.parametrize("compat", ["reference", "kubelet"])
def test_the_load_score_mode_and_the_rules_reach_the_served_decisions(tmp_path: Path, compat: str) -> None:
    settings = extender_settings(
        listen="127.0.0.1:0",
        nrt_files=_busy_and_sidecar_files(tmp_path),
        strategy="MostAllocated",
        load_mode="score",
        compat=compat,
    )
    with ExtenderApp(settings) as app:
        assert app.server is not None
        client = Client(app.server.url)
        # Zone 0 takes the pod on both nodes; it is busy on "hot": half the score.
        _, scores = client.post(
            "prioritize", {"Pod": pod("app", {"cpu": 4, "memory": 8 * GI}), "NodeNames": ["hot", "cool"]}
        )
        assert scores == [{"Host": "hot", "Score": 3}, {"Host": "cool", "Score": 5}]  # 25 and 50 of 100
        # The reference places a sidecar like an init container; the kubelet keeps its CPUs.
        _, result = client.post("filter", {"Pod": _sidecar_pod(), "NodeNames": ["solo"]})
        assert result["NodeNames"] == ([] if compat == "kubelet" else ["solo"])
        client.close()


def test_periods_take_durations_like_every_rte_command_or_bare_seconds() -> None:
    assert extender_settings(cache_resync_period="1m30s").cache.resync_period == 90.0
    assert extender_settings(cache_resync_period="500ms").cache.resync_period == 0.5
    assert extender_settings(cache_resync_period="7").cache.resync_period == 7.0


TUNED = [
    "--listen=127.0.0.1:9000",
    "--strategy=mostallocated",
    "--weight=cpu=3",
    "--weight",
    "memory=2,example.com/nic=5",
    "--cache-resync-period=7",
    "--foreign-pods-detect=onlyexclusiveresources",
    "--informer-mode=SHARED",
    "--scheduler-profile=a",
    "--scheduler-profile=b",
    "--stale-after=1m30s",
    "--stale-action=Unschedulable",
    "--dirty-after-failures=3",
    "--absent-pod-grace=0.7s",
    "--no-follow-clean-nodes",
    "--load-mode=score",
    "--load-threshold=memoryPressurePercent=90",
    "--load-threshold=cpuUtilizationPercent=70",
    "--load-score-factor=0.25",
    "--compat=Reference",
]


def test_dump_config_reads_back_through_config_to_the_same_settings(tmp_path: Path) -> None:
    first = CliRunner().invoke(main, ["extender", *TUNED, "--dump-config"], env={})
    assert first.exit_code == 0, first.output
    assert "# from --weight" in first.stdout
    config = tmp_path / "extender.yaml"
    config.write_text(first.stdout, encoding="utf-8")
    second = CliRunner().invoke(main, ["extender", "--config", str(config), "--dump-config"], env={})
    assert second.exit_code == 0, second.output
    assert yaml.safe_load(second.stdout) == yaml.safe_load(first.stdout)
    from_file = resolve(load(EXTENDER_SCHEMA, config_file=config, env={}))
    params = extender_cmd.make_context("extender", list(TUNED)).params
    assert from_file == extender_settings(**setting_flags(EXTENDER_SCHEMA, params))
    assert from_file.strategy == ScoringStrategy(
        "MostAllocated", {"cpu": 3, "memory": 2, "example.com/nic": 5}
    )
    config_of = from_file.cache.config
    assert (config_of.informer_mode, config_of.profiles) == (InformerMode.SHARED, frozenset({"a", "b"}))
    assert (config_of.heartbeat_max_age, config_of.absent_pod_grace) == (90.0, 0.7)
    assert dict(config_of.load.thresholds) == {"memoryPressurePercent": 90, "cpuUtilizationPercent": 70}


def test_every_setting_reads_its_rte_extender_environment_variable() -> None:
    env = {
        "RTE_EXTENDER_WEIGHT": "cpu=2 memory=3",  # whitespace-separated, as click read it before
        "RTE_EXTENDER_SCHEDULER_PROFILE": "a,b",
        "RTE_EXTENDER_INFORMER_MODE": "shared",
        "RTE_EXTENDER_CACHE_RESYNC_PERIOD": "5",
        "RTE_EXTENDER_DISCARD_RESERVED": "false",
        "RTE_EXTENDER_FOLLOW_CLEAN_NODES": "0",
        "RTE_EXTENDER_LISTEN": ":9999",
    }
    settings = resolve(load(EXTENDER_SCHEMA, env=env))
    assert dict(settings.strategy.weights) == {"cpu": 2, "memory": 3}
    assert settings.cache.config.profiles == frozenset({"a", "b"})
    assert settings.cache.config.informer_mode is InformerMode.SHARED
    assert (settings.cache.mode, settings.port) == (CacheMode.OVER_RESERVE, 9999)
    assert settings.cache.config.follow_clean_nodes is False
    for info in EXTENDER_SCHEMA.fields:
        assert info.env == "RTE_EXTENDER_" + info.flag[2:].replace("-", "_").upper()


def test_an_unknown_key_in_the_config_file_names_the_file_and_the_key(tmp_path: Path) -> None:
    config = tmp_path / "extender.yaml"
    config.write_text("listen: ':9000'\nweight: [cpu=2]\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["extender", "--config", str(config)], env={})
    assert result.exit_code == 2
    assert result.stderr == f"rte: error: {config}: weight: unknown setting\n"


def test_every_extender_flag_has_help_text() -> None:
    params = [p for p in extender_cmd.params if isinstance(p, click.Option) and not p.hidden]
    ctx = click.Context(extender_cmd)
    missing = [p.name for p in params if not (p.get_help_record(ctx) or ("", ""))[1].strip()]
    assert missing == []
    assert len(params) == len(EXTENDER_SCHEMA.fields) + 2  # --config and --dump-config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_command_serves_nrt_files_and_stops_cleanly_on_sigterm() -> None:
    port = _free_port()
    nrts = str(REPO / "examples" / "nrt-two-nodes.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rte", "extender", "--listen", f"127.0.0.1:{port}", "--nrt-file", nrts],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = Client(f"http://127.0.0.1:{port}")
                status, _ = client.get("/readyz")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
                time.sleep(0.05)
        assert status == 200
        pod = yaml.safe_load((REPO / "examples" / "pod-guaranteed.yaml").read_text())
        _, result = client.post("filter", {"Pod": pod, "NodeNames": ["worker-a", "worker-b"]})
        assert result["NodeNames"] == ["worker-b"]
        _, scores = client.post("prioritize", {"Pod": pod, "NodeNames": ["worker-b"]})
        assert scores == [{"Host": "worker-b", "Score": 5}]
        client.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert json.dumps(result)  # the answer was JSON all along
