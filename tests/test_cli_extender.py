"""``rte extender`` as a command: flag validation, and a real process serving NRT files until SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from extender_helpers import Client
from rte.cli import main
from rte.consumer.cacheconfig import CacheMode, ForeignPodsDetect, InformerMode
from rte.extender.settings import extender_settings

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--strategy", "Best"], {}, "rte: error: --strategy: unknown strategy 'Best'"),
        ([], {"RTE_EXTENDER_STRATEGY": "Best"}, "rte: error: --strategy: unknown strategy 'Best'"),
        (["--weight", "gpu"], {}, "rte: error: --weight: expected RESOURCE=WEIGHT, got 'gpu'"),
        (["--listen", "everywhere"], {}, "rte: error: --listen: expected HOST:PORT, got 'everywhere'"),
        (
            ["--cache-resync-period", "soon"],
            {},
            "rte: error: --cache-resync-period: expected a duration or a number of seconds, got 'soon'",
        ),
        (["--resync-method", "Some"], {}, "rte: error: --resync-method: 'Some' is not one of Autodetect"),
        (["--informer-mode", "dedicated"], {}, "rte: error: --informer-mode: 'dedicated' is not one of"),
        (["--log-level", "loud"], {}, "rte: error: --log-level: unknown level 'loud'"),
        (["--nrt-file", "/nonexistent.yaml"], {}, "rte: error: /nonexistent.yaml: cannot read"),
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


def test_periods_take_durations_like_every_rte_command_or_bare_seconds() -> None:
    assert extender_settings(cache_resync_period="1m30s").cache.resync_period == 90.0
    assert extender_settings(cache_resync_period="500ms").cache.resync_period == 0.5
    assert extender_settings(cache_resync_period="7").cache.resync_period == 7.0


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
