"""Command-line flags generated from a settings schema (:mod:`rte.settings`): one per setting.

Every flag defaults to "not given" (``None``), so only flags actually typed override the file
and the environment. Values reach the settings loader as typed, so a bad flag fails with the
same one-line message as a bad file or environment value, and choices match in any case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from rte.settings.schema import BOOL, CHOICE, DURATION, FLOAT, INT, LIST, PATH, FieldInfo, Schema

_METAVAR = {DURATION: "DURATION", PATH: "PATH", INT: "N", FLOAT: "NUMBER", LIST: "TEXT"}
_OLD = "__old"


class SettingsCommand(click.Command):
    """A command with ``--config FILE``, ``--dump-config`` and one flag per setting of a schema.

    The schema is imported when the command's parameters are first needed (its ``--help`` or a
    run), so that listing the commands does not load every command's settings.
    """

    def __init__(
        self,
        name: str | None,
        *,
        schema: Callable[[], Schema[Any]],
        config_help: str,
        **kwargs: Any,
    ) -> None:
        self._schema = schema
        self._config_help = config_help
        self._own: list[click.Parameter] = []
        self._all: list[click.Parameter] | None = None
        super().__init__(name, **kwargs)

    @property
    def params(self) -> list[click.Parameter]:
        # One list object, built once: click appends its help option to it and pops it again.
        if self._all is None:
            generated = _setting_params(self._schema(), self._config_help)
            self._all = [*generated[:2], *self._own, *generated[2:]]
        return self._all

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self._own = list(value)
        self._all = None


class _SettingOption(click.Option):
    """An option whose help (the setting's docstring) is only looked up for ``--help``."""

    def __init__(self, *args: Any, info: FieldInfo, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.info = info

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = help_text(self.info)
        return super().get_help_record(ctx)


def help_text(info: FieldInfo) -> str:
    """The setting's docstring, default, environment variable and, when it is not the flag's name
    (a repeatable flag's key is plural: ``--weight`` -> ``weights``), its ``--config`` file key:
    ``... [default: 500ms; env: RTE_X; file key: weights]``."""
    from rte.settings.values import shown

    default = shown(info.spec, info.default)
    extras = ([f"default: {default}"] if default else []) + [f"env: {info.env}"]
    if info.name != file_key_of_flag(info.flag):
        extras.append(f"file key: {info.name}")
    return f"{info.doc}  [{'; '.join(extras)}]"


def file_key_of_flag(flag: str) -> str:
    """The file key a flag would have by the plain rule: ``--poll-interval`` -> ``poll_interval``."""
    return flag.removeprefix("--").replace("-", "_")


def _option(info: FieldInfo) -> list[click.Parameter]:
    """The setting's flag (a ``--x/--no-x`` switch for a boolean) and its former spellings."""
    spec = info.spec
    kwargs: dict[str, Any] = {"info": info, "default": None, "hidden": spec.hidden}
    if spec.kind == BOOL:
        name = info.flag[2:]
        return [_SettingOption([f"--{name}/--no-{name}", info.name], **kwargs), *_old(info)]
    if spec.kind == CHOICE:
        kwargs["metavar"] = "[" + "|".join(spec.allowed) + "]"
    else:
        kwargs["metavar"] = spec.metavar or _METAVAR.get(spec.kind, "TEXT")
    kwargs["multiple"] = spec.kind == LIST
    return [_SettingOption([info.flag, *spec.aliases, info.name], **kwargs), *_old(info)]


def _old(info: FieldInfo) -> list[click.Parameter]:
    """Hidden options for former spellings of the flag."""
    out: list[click.Parameter] = []
    for i, old in enumerate(info.old_flags):
        dest = f"{info.name}{_OLD}{i}"
        if info.kind == BOOL:
            value = not old.startswith("--no-")
            out.append(click.Option([old, dest], is_flag=True, flag_value=value, default=None, hidden=True))
        else:
            out.append(click.Option([old, dest], default=None, hidden=True, multiple=info.kind == LIST))
    return out


def _setting_params(schema: Schema[Any], config_help: str) -> list[click.Parameter]:
    params: list[click.Parameter] = [
        click.Option(
            ["--config", "config_file"],
            default=None,
            metavar="FILE",
            help=f"{config_help}  [env: {schema.config_env}]",
        ),
        click.Option(
            ["--dump-config"],
            is_flag=True,
            help="Print the effective settings in the --config file format and exit.",
        ),
    ]
    for info in schema.fields:
        params.extend(_option(info))
    return params


def setting_flags(
    schema: Schema[Any], options: dict[str, Any], warn: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Take the setting flags out of click's ``options``: name -> value as typed, None if not given.

    A former spelling counts when the current one was not given; using one is warned about.
    """
    from rte.settings.loader import deprecated, stderr_warning

    flags: dict[str, Any] = {}
    for info in schema.fields:
        value = options.pop(info.name, None)
        for i, spelling in enumerate(info.old_flags):
            old = _given(options.pop(f"{info.name}{_OLD}{i}", None))
            if old is None:
                continue
            new = f"--no-{info.flag[2:]}" if spelling.startswith("--no-") else info.flag
            (warn or stderr_warning)(deprecated(spelling, new))
            if _given(value) is None:
                value = old
        flags[info.name] = _given(value)
    return flags


def _given(value: Any) -> Any:
    return None if value == () else value
