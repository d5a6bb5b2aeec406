"""What the command line tells a user: the command list, flag help, and the README's examples."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from rte.cli import main
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


def _readme_block(heading: str) -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split(heading, 1)[1]
    return section.split("```sh\n", 1)[1].split("```", 1)[0]


def test_the_readme_fingerprint_example_runs_as_written(tmp_path: Path) -> None:
    block = _readme_block("### `rte fingerprint`")
    (tmp_path / "tests").symlink_to(REPO / "tests")  # the example's fixture path, relative to the repo
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split()
    claimed = re.findall(r"# prints (pfp0v001[0-9a-f]{16})", block)
    assert claimed and printed[0] == claimed[0]
    assert f"--check {claimed[0]}" in block
    assert '"fingerprintComputed": "pfp0v0011dff29797c87d495"' in done.stderr  # the trace
