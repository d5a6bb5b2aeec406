"""deploy/prometheus-rules.yaml: every alert passes promtool's unit tests and has its runbook.

promtool ships with Debian's prometheus package (installed by .ci/run). Without it the promtool
tests skip, except under CI, where a missing promtool is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.paths import REPO

RULES = REPO / "deploy" / "prometheus-rules.yaml"
UNIT_TESTS = Path(__file__).with_name("prometheus-rules-tests.yaml")


def rule_groups() -> list[dict[str, Any]]:
    (rule,) = [d for d in yaml.safe_load_all(RULES.read_text()) if d is not None]
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups() for r in g["rules"] if "alert" in r]


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool is not installed (Debian package prometheus: apt-get install -y prometheus)"
        if os.environ.get("CI"):
            pytest.fail(message + "; .ci/run installs it")
        pytest.skip(message)
    return found


def write_rules_file(directory: Path) -> Path:
    """The PrometheusRule's groups as a plain Prometheus rules file (what the operator generates)."""
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    return path


def test_the_rules_are_valid_promql_for_promtool(tmp_path: Path) -> None:
    result = subprocess.run(
        [promtool(), "check", "rules", str(write_rules_file(tmp_path))], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_every_alert_passes_its_promtool_unit_tests(tmp_path: Path) -> None:
    write_rules_file(tmp_path)
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    result = subprocess.run(
        [promtool(), "test", "rules", UNIT_TESTS.name], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_a_broken_rule_fails_its_unit_test(tmp_path: Path) -> None:
    rules = write_rules_file(tmp_path)
    rules.write_text(rules.read_text().replace("> 600", "> 6000"))
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    result = subprocess.run(
        [promtool(), "test", "rules", UNIT_TESTS.name], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode != 0 and "RteNRTNotPublished" in result.stdout + result.stderr


def test_every_alert_is_unit_tested_both_firing_and_silent() -> None:
    cases = [c for t in yaml.safe_load(UNIT_TESTS.read_text())["tests"] for c in t["alert_rule_test"]]
    for alert in alerts():
        mine = [c for c in cases if c["alertname"] == alert["alert"]]
        assert any(c["exp_alerts"] for c in mine), f"{alert['alert']} never fires in a test"
        assert any(not c["exp_alerts"] for c in mine), f"{alert['alert']} is never shown silent"


def test_every_alert_has_a_summary_a_description_a_severity_and_a_runbook_in_the_docs() -> None:
    """The runbook annotation is a link a reader can follow: docs/operating.md and the anchor that
    GitHub (and most Markdown renderers) give the alert's heading, its name in lower case."""
    operating = (REPO / "docs" / "operating.md").read_text()
    for alert in alerts():
        name = alert["alert"]
        annotations = alert["annotations"]
        assert annotations["summary"] and len(annotations["description"]) > 80, name
        assert alert["labels"]["severity"] in ("warning", "critical"), name
        assert annotations["runbook"] == f"docs/operating.md#{name.lower()}"
        assert re.search(rf"^### {name}$", operating, re.MULTILINE), f"no runbook section for {name}"
