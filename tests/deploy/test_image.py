"""hack/build-image.sh: refuses clearly without its tools (the build itself runs in .ci/run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import HACK

SCRIPT = HACK / "build-image.sh"


def run_with_path(
    tmp_path: Path, *tools: str, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """The script with a PATH holding only ``tools`` (links to the real ones) and bash itself: a
    tool may be a wrapper script run through ``/usr/bin/env bash`` (a version manager's shim)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*tools, "bash"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed here")
        (bin_dir / tool).symlink_to(found)
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, str(SCRIPT), *args],
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize(
    ("present", "missing"),
    [((), "buildah"), (("buildah",), "mmdebstrap"), (("buildah", "mmdebstrap"), "go")],
    ids=["none", "no-mmdebstrap", "no-go"],
)
def test_a_missing_tool_fails_with_one_line_naming_it_and_the_install_command(
    tmp_path: Path, present: tuple[str, ...], missing: str
) -> None:
    result = run_with_path(tmp_path, "dirname", *present)
    assert result.returncode == 1
    assert result.stderr == (
        f"build-image: {missing} is missing; install it with: "
        "apt-get install -y buildah mmdebstrap golang-go\n"
    )
    assert result.stdout == ""


def test_an_unknown_argument_is_a_usage_error(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, str(SCRIPT), "--push"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("build-image: unknown argument --push")


def test_an_unknown_architecture_is_a_usage_error(tmp_path: Path) -> None:
    result = run_with_path(tmp_path, "dirname", "buildah", "mmdebstrap", "go", args=("--arch", "sparc64"))
    assert result.returncode == 2
    assert result.stderr == "build-image: unsupported architecture sparc64 (amd64, arm64)\n"
