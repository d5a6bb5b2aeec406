"""What the command line tells a user: the command list, flag help, and the documented fingerprint trace."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import click
from click.testing import CliRunner

from rte.cli import main
from tests.cli.test_docs import blocks, environment
from tests.helpers.paths import REPO


def test_rte_help_lists_each_command_with_its_whole_short_description() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    listing = " ".join(result.stdout.split("Commands:")[1].split())
    assert "..." not in listing
    for name, command in main.commands.items():
        assert command.short_help, name
        assert f"{name} {command.short_help}" in listing


def test_every_flag_of_every_command_has_help_text() -> None:
    for name, command in main.commands.items():
        ctx = click.Context(command, info_name=name)
        for param in command.get_params(ctx):
            if isinstance(param, click.Option) and not param.hidden:
                record = param.get_help_record(ctx)
                assert record is not None and record[1].strip(), f"rte {name} {param.opts[0]}"


def test_fit_node_help_says_what_the_allocatable_check_does() -> None:
    result = CliRunner().invoke(main, ["fit", "--help"], terminal_width=500)
    text = " ".join(result.stdout.split())
    assert "On a node whose NRT is filtered, a requested resource missing from the Node" in text
    assert "A Node without an NRT is listed too, and fits." in text


def test_the_fingerprint_example_prints_its_trace_as_documented(tmp_path: Path) -> None:
    """docs/agent.md's example (run as a whole by tests/cli/test_docs.py); here, its trace."""
    page = REPO / "docs" / "agent.md"
    (block,) = [b for b in blocks(page) if "rte fingerprint pods.txt --trace" in b.text]
    (tmp_path / "tests").symlink_to(REPO / "tests")
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    claimed = re.findall(r"# prints (pfp0v001[0-9a-f]{16})", block.text)
    assert claimed and done.stdout.split()[0] == claimed[0]
    assert f"--check {claimed[0]}" in block.text
    assert '"fingerprintComputed": "pfp0v0011dff29797c87d495"' in done.stderr  # the trace
