"""`rte run --once` through the CLI (no cluster), the agent's app run in-process against the
apiserver double, and the agent's log formats."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rte.agent.app import AgentApp
from rte.agent.logs import configure_logging
from rte.agent.settings import load_settings
from rte.cli import main
from rte.testing.apiserver import FakeApiServer
from rte.testing.fake_kubelet import FakeKubelet
from tests.helpers.agent_api import wait_until
from tests.helpers.paths import R640_KUBELET_CONFIG, R640_MEMORY_STATE, R640_STATIC, R640_SYSFS

SYSFS, SCENARIO, CONFIG = R640_SYSFS, R640_STATIC, R640_KUBELET_CONFIG
CHECKPOINT = R640_MEMORY_STATE


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    rte_level = logging.getLogger("rte").level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("rte").setLevel(rte_level)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["run", "--node-name", "n1", "--sysfs", str(SYSFS), *args], env={})
    return result.exit_code, result.stdout, result.stderr


def test_once_without_publishing_prints_the_same_object_as_dump() -> None:
    code, out, err = run(
        "--once", "--no-publish", "--podresources", str(SCENARIO), "--kubelet-config", str(CONFIG)
    )
    assert code == 0, err
    args = ["dump", "--node-name", "n1", "--sysfs", str(SYSFS), "--podresources", str(SCENARIO)]
    dumped = CliRunner().invoke(main, [*args, "--kubelet-config", str(CONFIG), "-o", "yaml"])
    assert yaml.safe_load(out) == yaml.safe_load(dumped.stdout)


@pytest.mark.parametrize("method", ["all", "with-exclusive-resources"])
def test_once_without_publishing_and_dump_read_the_same_checkpoint_into_the_same_object(
    tmp_path: Path, method: str
) -> None:
    state = json.loads(CHECKPOINT.read_text())
    state["machineState"]["1"]["memoryMap"]["memory"]["free"] = 40 * 2**30  # disagrees with podresources
    (tmp_path / "memory_manager_state").write_text(json.dumps(state))
    inputs = ["--podresources", str(SCENARIO), "--kubelet-config", str(CONFIG)]
    code, out, err = run(
        "--once", "--no-publish", "-o", "json", *inputs, "--kubelet-root", str(tmp_path),
        "--fingerprint-method", method,
    )  # fmt: skip
    assert code == 0, err
    args = ["dump", "--node-name", "n1", "--sysfs", str(SYSFS), *inputs, "--fingerprint-method", method]
    dumped = CliRunner().invoke(main, [*args, "--kubelet-root", str(tmp_path), "-o", "json"])
    assert dumped.exit_code == 0, dumped.stderr
    assert json.loads(out) == json.loads(dumped.stdout)
    zone1 = json.loads(out)["zones"][1]
    memory = next(r for r in zone1["resources"] if r["name"] == "memory")
    assert memory["available"] == str(40 * 2**30)  # both took the checkpoint's word


def test_once_reads_the_kubelet_over_its_socket_and_prints_json() -> None:
    with FakeKubelet(scenario=SCENARIO) as kubelet:
        code, out, err = run("--once", "--no-publish", "-o", "json", "--podresources", kubelet.endpoint)
    assert code == 0, err
    obj = json.loads(out)
    assert obj["metadata"]["name"] == "n1"
    assert [z["name"] for z in obj["zones"]] == ["node-0", "node-1"]


def test_once_fails_with_status_1_and_one_line_when_the_kubelet_is_absent(tmp_path: Path) -> None:
    socket = tmp_path / "absent.sock"
    code, out, err = run(
        "--once", "--no-publish", "--podresources", f"unix://{socket}", "--kubelet-timeout", "300ms"
    )
    assert code == 1
    assert out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("rte: error: kubelet: kubelet podresources GetAllocatableResources at unix://")
    assert "No such file or directory" in last


def test_once_with_a_broken_sysfs_root_is_an_input_error(tmp_path: Path) -> None:
    code, _, err = run("--once", "--no-publish", "--podresources", str(SCENARIO), "--sysfs", str(tmp_path))
    assert code == 2
    assert err.strip().splitlines()[-1] == f"rte: error: {tmp_path}: not a sysfs root: neither" + (
        " devices/system/node nor devices/system/cpu exists"
    )


def test_once_with_an_unreadable_sysfs_file_exits_2_naming_it_while_the_daemon_would_retry(
    tmp_path: Path,
) -> None:
    sysfs = tmp_path / "sys"
    shutil.copytree(SYSFS, sysfs, symlinks=True)
    distance = sysfs / "devices" / "system" / "node" / "node0" / "distance"
    distance.unlink()
    distance.mkdir()  # reading it fails with EISDIR, even as root
    code, out, err = run("--once", "--no-publish", "--podresources", str(SCENARIO), "--sysfs", str(sysfs))
    assert (code, out) == (2, "")
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"rte: error: {distance}: ")
    assert "retry" not in err


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_once_into_a_closed_pipe_ends_quietly_like_other_command_line_tools(output: str) -> None:
    # `rte run --once --no-publish | head -5`: the reader is gone before the object is written.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        argv = [sys.executable, "-m", "rte", "run", "--once", "--no-publish", "-o", output]
        argv += ["--node-name", "n1", "--sysfs", str(SYSFS), "--podresources", str(SCENARIO)]
        result = subprocess.run(argv, stdout=writer, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(writer)
    assert "Traceback" not in result.stderr
    assert "Broken pipe" not in result.stderr
    assert "error" not in result.stderr.lower()
    assert result.returncode == 1  # as `rte dump | head` ends


def test_once_with_bad_kubelet_data_is_an_input_error_with_status_2_and_no_retrying(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario"
    scenario.mkdir()
    (scenario / "list.json").write_text('{"pod_resources": [{"name": 5}]}')
    shutil.copy(SCENARIO / "get_allocatable_resources.protojson.json", scenario)
    code, out, err = run(
        "--once", "--no-publish", "--podresources", str(scenario), "--kubelet-config", str(CONFIG)
    )
    assert (code, out) == (2, "")
    assert err == f"rte: error: {scenario}/list.json: pod_resources[0].name: expected a string, got 5\n"


def test_once_with_undecodable_bytes_from_the_kubelet_socket_is_status_2_in_one_line() -> None:
    with FakeKubelet(scenario=SCENARIO) as kubelet:
        kubelet.serve_raw("List", b"\xff\xff\xff")
        code, out, err = run(
            "--once", "--no-publish", "--podresources", kubelet.endpoint, "--kubelet-config", str(CONFIG)
        )
    assert (code, out) == (2, "")
    assert err.startswith("rte: error: kubelet List response from unix://") and "does not decode" in err
    assert err.count("\n") == 1 and "retrying" not in err


def test_the_agent_app_publishes_serves_its_probes_and_stops_within_its_shutdown_timeout(
    fake_apiserver: FakeApiServer, kube_api_client: object, tmp_path: Path
) -> None:
    fake_apiserver.register_node("n1")
    flags = {
        "node_name": "n1",
        "sysfs_root": str(SYSFS),
        "podresources": str(SCENARIO),
        "kubelet_config": str(CONFIG),
        "notify_file": str(tmp_path / "notify"),
        "watch_kubelet_state": False,
        "http_address": "127.0.0.1:0",
        "shutdown_timeout": "3s",
    }
    app = AgentApp(load_settings(env={}, flags=flags), api_client=kube_api_client).start()
    try:
        assert app.health is not None
        url = f"http://127.0.0.1:{app.health.port}"
        wait_until(lambda: fake_apiserver.nrt("n1") is not None, what="the first publish")
        wait_until(lambda: _status(url + "/readyz") == 200, what="readiness")
        assert _status(url + "/healthz") == 200
        metrics = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        assert 'rte_agent_nrt_writes_total{outcome="created"} 1' in metrics
    finally:
        started = time.monotonic()
        app.stop()
    assert time.monotonic() - started < 3 + 1
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/healthz", timeout=2)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return e.code


def test_json_logs_carry_time_level_logger_message_and_fields() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    log = logging.getLogger("rte.agent.test")
    log.info("published %s", "n1", extra={"outcome": "patched", "reasons": ["kubelet"]})
    log.debug("not shown at info")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("cycle failed")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert first["level"] == "info" and first["logger"] == "rte.agent.test" and first["msg"] == "published n1"
    assert first["outcome"] == "patched" and first["reasons"] == ["kubelet"]
    assert first["ts"].endswith("Z") and "T" in first["ts"]
    assert lines[1]["level"] == "error" and "ValueError: boom" in lines[1]["error"]


def test_text_logs_are_one_line_with_fields_as_key_value() -> None:
    stream = io.StringIO()
    configure_logging("debug", "text", stream)
    logging.getLogger("rte.x").debug("started", extra={"node": "n1", "http": 8080})
    logging.getLogger("urllib3").debug("library chatter stays out at debug")
    (line,) = stream.getvalue().splitlines()
    assert line.endswith(' DEBUG   rte.x: started node="n1" http=8080')
