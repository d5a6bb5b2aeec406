"""One vocabulary across every command (issue #24): one flag name per concept, one duration syntax,
``$KUBECONFIG`` honoured, usage errors as one line with exit 2, unknown ``RTE_*`` variables warned
about, former names accepted for one release with a one-line warning, and a setting's file key
either its flag's name or shown in its help.

The commands' flags are read from the click commands themselves (``rte`` and ``kubectl-rte``), the
settings from the three schemas, so a new command or flag is checked without touching this file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from rte.agent.settings import AGENT_SCHEMA
from rte.cli import kubectl_main, main
from rte.commands.options import file_key_of_flag, help_text
from rte.extender.settings import EXTENDER_SCHEMA
from rte.runtime.kubeclient import AGENT_SOURCES, KUBECTL_ORDER, Source
from rte.settings.loader import env_layer, file_layer, load
from rte.settings.schema import DURATION, ENV_PREFIXES, LIST, Schema
from rte.sim.scenario import SCENARIO_SCHEMA
from tests.helpers.paths import R640_STATIC, R640_SYSFS, REPO

SCHEMAS: dict[str, Schema[Any]] = {
    "run": AGENT_SCHEMA,
    "extender": EXTENDER_SCHEMA,
    "simulate": SCENARIO_SCHEMA,
}

DEPRECATED = "is deprecated and will be removed in the next release"

# concept -> (the one flag name, the former names still accepted, hidden, for one release)
CONCEPTS = {
    "namespace of the agents' heartbeat Leases": ("--lease-namespace", ("--heartbeat-namespace",)),
    "age after which a Lease marks its node stale": ("--stale-after", ("--heartbeat-max-age",)),
    "scheduler names whose pods read NRTs": ("--scheduler-profile", ("--nrt-scheduler",)),
    "the kubelet's root directory": ("--kubelet-root", ("--kubelet-dir",)),
    "which pods the fingerprint covers": ("--fingerprint-method", ("--method",)),
    "deadline of one apiserver request": ("--request-timeout", ("--api-timeout",)),
    "the reserve cache's resync period": ("--cache-resync-period", ("--resync-period",)),
}


def commands() -> Iterator[tuple[str, click.Command]]:
    for group, prefix in ((main, "rte"), (kubectl_main, "kubectl-rte")):
        for name, command in group.commands.items():
            yield f"{prefix} {name}", command


def options(command: click.Command) -> list[click.Option]:
    ctx = click.Context(command)
    return [p for p in command.get_params(ctx) if isinstance(p, click.Option)]


def visible_flags(command: click.Command) -> set[str]:
    return {o for p in options(command) if not p.hidden for o in (*p.opts, *p.secondary_opts)}


def hidden_flags(command: click.Command) -> set[str]:
    return {o for p in options(command) if p.hidden for o in p.opts}


def test_each_concept_has_one_flag_name_and_the_former_names_are_hidden() -> None:
    for concept, (flag, former) in CONCEPTS.items():
        users = [name for name, command in commands() if flag in visible_flags(command)]
        assert users, f"no command offers {flag} ({concept})"
        for name, command in commands():
            for old in former:
                assert old not in visible_flags(command), f"{name} still shows {old}: use {flag}"
                if old in hidden_flags(command):
                    assert flag in visible_flags(command), f"{name} takes {old} but not {flag}"


def test_the_agent_and_dump_spell_their_shared_inputs_alike() -> None:
    """`rte dump` computes what `rte run` publishes: each input it reads is a flag of both."""
    run, dump = main.commands["run"], main.commands["dump"]
    for flag in ("--sysfs-root", "--sysfs", "--node-name", "--podresources", "--kubelet-config"):
        assert flag in visible_flags(dump) and flag in visible_flags(run), flag
    assert {"--kubelet-root", "--fingerprint-method", "--zone-names"} <= visible_flags(dump) & visible_flags(
        run
    )


def test_a_flag_name_takes_the_same_kind_of_value_in_every_command() -> None:
    kinds: dict[str, tuple[str, tuple[bool, bool]]] = {}
    for name, command in commands():
        for option in options(command):
            kind = (option.is_flag, option.multiple)
            for flag in option.opts:
                seen = kinds.setdefault(flag, (name, kind))
                assert seen[1] == kind, f"{flag}: {seen[0]} and {name} disagree on flag/repeatable"


@pytest.mark.parametrize(
    ("argv", "warning"),
    [
        (["run", "--api-timeout", "3", "--dump-config"], "--api-timeout is deprecated"),
        (["extender", "--heartbeat-namespace", "ns", "--dump-config"], "--heartbeat-namespace is deprecated"),
        (["extender", "--heartbeat-max-age", "3", "--dump-config"], "--heartbeat-max-age is deprecated"),
        (["simulate", "--resync-period", "3", "--dump-config"], "--resync-period is deprecated"),
        (["simulate", "--dirty-after", "2", "--dump-config"], "--dirty-after is deprecated"),
    ],
)
def test_a_former_setting_flag_still_works_and_warns_on_one_line(argv: list[str], warning: str) -> None:
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"rte: warning: {warning}")
    assert "# from --" in result.stdout  # the value reached the setting under its new name


def test_a_former_flag_of_dump_still_works_and_warns(tmp_path: Path) -> None:
    args = ["dump", "--sysfs", str(R640_SYSFS), "--podresources", str(R640_STATIC), "--node-name", "n"]
    args += ["-o", "json"]
    current = CliRunner().invoke(
        main, [*args, "--fingerprint-method", "all", "--kubelet-root", str(tmp_path)]
    )
    former = CliRunner().invoke(main, [*args, "--method", "all", "--kubelet-dir", str(tmp_path)])
    assert (current.exit_code, former.exit_code) == (0, 0)
    assert current.stdout == former.stdout and current.stderr == ""
    assert '"value": "all"' in current.stdout  # the method reached the fingerprint
    assert sorted(former.stderr.splitlines()) == [
        f"rte: warning: --kubelet-dir {DEPRECATED}; use --kubelet-root",
        f"rte: warning: --method {DEPRECATED}; use --fingerprint-method",
    ]


def test_former_names_work_in_files_and_variables_with_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "extender.yaml"
    config.write_text("heartbeat_max_age: 90\n")
    warned: list[str] = []
    layer = file_layer(EXTENDER_SCHEMA, config, warned.append)
    assert layer["stale_after"][0] == 90.0
    layer = env_layer(AGENT_SCHEMA, {"RTE_API_TIMEOUT": "4"}, warned.append)
    assert layer["request_timeout"][0] == 4.0
    assert warned == [
        f"{config}: heartbeat_max_age {DEPRECATED}; use 'stale_after'",
        f"RTE_API_TIMEOUT {DEPRECATED}; use RTE_REQUEST_TIMEOUT",
    ]


def test_every_duration_setting_takes_units_or_bare_seconds_in_every_layer(tmp_path: Path) -> None:
    """`rte run --poll-interval 2` was refused while every other command took bare seconds."""
    for command, schema in SCHEMAS.items():
        for info in schema.fields:
            if info.kind != DURATION or info.spec.optional:
                continue
            flag = load(schema, env={}, flags={info.name: "2"})
            env = load(schema, env={info.env: "2"})
            config = tmp_path / f"{command}.yaml"
            config.write_text(f"{info.name}: 2\n")
            file = load(schema, config_file=config, env={})
            units = load(schema, env={}, flags={info.name: "2000ms"})
            values = {getattr(s, info.name) for s in (flag, env, file, units)}
            assert values == {2.0}, f"rte {command} {info.flag}"


@pytest.mark.parametrize("value", ["2", "2s", "2000ms"])
def test_the_views_durations_read_like_the_settings(value: str) -> None:
    from rte.commands.kubeflags import KubeFlags
    from rte.commands.views import _seconds

    assert KubeFlags(request_timeout=value).timeout_seconds() == 2.0
    assert _seconds("--stale-after", value) == 2.0


def test_a_file_key_is_its_flag_name_or_the_help_says_it() -> None:
    """A repeatable flag's key is plural (``--weight`` -> ``weights``); the help names such keys."""
    for command, schema in SCHEMAS.items():
        for info in schema.fields:
            if info.name == file_key_of_flag(info.flag):
                continue
            assert f"file key: {info.name}" in help_text(info), f"rte {command} {info.flag}"
            if info.kind == LIST:
                assert info.name.endswith("s"), f"rte {command} {info.flag}: a list's key is plural"


def test_every_command_reports_a_usage_error_on_one_line_with_exit_2() -> None:
    for name, command in commands():
        group = main if name.startswith("rte ") else kubectl_main
        result = CliRunner().invoke(group, [command.name or "", "--no-such-flag"])
        assert result.exit_code == 2, name
        assert result.stderr.count("\n") == 1, (name, result.stderr)
        assert "No such option '--no-such-flag'" in result.stderr and result.stdout == "", name
    missing = CliRunner().invoke(main, ["fit"])
    assert missing.stderr == "rte: error: rte fit: Missing option '--pod'; see rte fit --help\n"
    choice = CliRunner().invoke(main, ["dump", "-o", "xml"])
    assert (choice.exit_code, choice.stderr.count("\n")) == (2, 1)
    assert "'xml' is not one of 'table', 'json', 'yaml'" in choice.stderr


def test_an_unknown_rte_variable_is_warned_about_but_not_service_variables() -> None:
    env = {
        "RTE_POLL_INTERVALL": "1s",  # misspelt
        "RTE_METRICS_SERVICE_HOST": "10.0.0.1",  # a Service named rte-metrics
        "RTE_METRICS_PORT_8080_TCP_ADDR": "10.0.0.1",
        "RTE_EXTENDER_LISTEN": ":1",  # another command's
        "RTE_LOCAL_RUN_DIR": "/tmp",
    }
    warned: list[str] = []
    env_layer(AGENT_SCHEMA, env, warned.append)
    assert warned == [
        "RTE_POLL_INTERVALL: no such setting of this command, ignored (did you mean RTE_POLL_INTERVAL?)"
    ]
    warned.clear()
    env_layer(EXTENDER_SCHEMA, {"RTE_EXTENDER_LISTN": ":1", "RTE_POLL_INTERVAL": "1s"}, warned.append)
    assert warned == [
        "RTE_EXTENDER_LISTN: no such setting of this command, ignored (did you mean RTE_EXTENDER_LISTEN?)"
    ]
    assert {s.env_prefix for s in SCHEMAS.values()} == set(ENV_PREFIXES)


def test_the_command_line_warns_of_an_unknown_variable_once() -> None:
    result = CliRunner().invoke(main, ["run", "--dump-config"], env={"RTE_PUBLISHH": "false"})
    assert result.exit_code == 0
    assert result.stderr == (
        "rte: warning: RTE_PUBLISHH: no such setting of this command, ignored (did you mean RTE_PUBLISH?)\n"
    )


def test_every_command_that_talks_to_a_cluster_honours_kubeconfig() -> None:
    """The views and `rte fit` use kubectl's order, the extender in-cluster then a kubeconfig; the
    agent took in-cluster only and ignored $KUBECONFIG (tests/agent/test_kube.py runs it)."""
    from rte.extender import app

    kubeconfig_sources = {Source.DEFAULT_KUBECONFIG, Source.KUBECONFIG_VARIABLE}
    assert kubeconfig_sources & set(KUBECTL_ORDER)
    assert kubeconfig_sources & set(AGENT_SOURCES)
    assert "Source.DEFAULT_KUBECONFIG" in Path(app.__file__).read_text()
    for schema in (AGENT_SCHEMA, EXTENDER_SCHEMA):
        assert "kubeconfig" in schema.by_name
    for name, command in commands():
        if "--context" in visible_flags(command):
            assert "--kubeconfig" in visible_flags(command), name


def test_the_docs_use_no_former_flag_name() -> None:
    """Except where a page shows the deprecation warning or says "former" (CHANGELOG.md lists them)."""
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for path in texts:
        paragraphs = path.read_text(encoding="utf-8").split("\n\n")
        text = "\n\n".join(p for p in paragraphs if "the former" not in " ".join(p.split()))
        for flag, former in CONCEPTS.values():
            for old in former:
                text = text.replace(f"{old} is deprecated", "")
                assert f"{old} " not in text and f"`{old}`" not in text, f"{path.name}: {old} (now {flag})"
