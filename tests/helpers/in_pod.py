"""Run a Python probe as if inside a pod: a service-account token and CA, and the Service env."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_in_pod(tmp_path: Path, probe: str, token: str = "t0ken") -> subprocess.CompletedProcess[str]:
    """``python -c probe <token file> <ca file>`` with ``KUBERNETES_SERVICE_HOST/PORT`` set (the
    probe points ``incluster_config`` at the two files); not checked: the caller reads the result."""
    (tmp_path / "token").write_text(token)
    (tmp_path / "ca.crt").write_text("not checked until a request\n")
    env = {**os.environ, "KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    return subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "token"), str(tmp_path / "ca.crt")],
        capture_output=True,
        text=True,
        env=env,
    )
