"""The command-line options of ``rte run``: one flag per setting, generated from the settings.

Each flag defaults to "not given" (None), so only flags actually typed override the lower
layers. Values are passed on as typed and converted (and validated) by :mod:`rte.settings`,
so a bad flag value fails with the same one-line message as a bad file or environment value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rte.settings import BOOL, CHOICE, DURATION, LIST, PATH, FieldInfo, catalogue

F = TypeVar("F", bound=Callable[..., Any])

# Extra spellings, matching `rte dump`.
_ALIASES = {"sysfs_root": ("--sysfs",)}
_METAVAR = {DURATION: "DURATION", PATH: "PATH", "int": "N", "float": "NUMBER", "str": "TEXT"}


class _SettingOption(click.Option):
    """An option whose help text (the setting's docstring) is only looked up for ``--help``."""

    def __init__(self, *args: Any, info: FieldInfo, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.info = info

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = f"{self.info.doc} [env {self.info.env}]"
        return super().get_help_record(ctx)


def _option(info: FieldInfo) -> Callable[[F], F]:
    common: dict[str, Any] = {"cls": _SettingOption, "info": info, "default": None}
    if info.kind == BOOL:
        name = info.name.replace("_", "-")
        return click.option(f"--{name}/--no-{name}", info.name, **common)
    if info.kind == LIST:
        return click.option(info.flag, info.name, multiple=True, metavar="TEXT", **common)
    metavar = "[" + "|".join(info.choices) + "]" if info.kind == CHOICE else _METAVAR.get(info.kind, "VALUE")
    return click.option(info.flag, *_ALIASES.get(info.name, ()), info.name, metavar=metavar, **common)


def run_options(func: F) -> F:
    """Decorate the ``run`` command with the mode flags and one flag per setting."""
    for info in reversed(catalogue()):
        func = _option(info)(func)
    func = click.option(
        "-o",
        "--output",
        type=click.Choice(["yaml", "json"]),
        default="yaml",
        show_default=True,
        help="With --no-publish: print objects as YAML documents or JSON lines.",
    )(func)
    func = click.option("--dump-config", is_flag=True, help="Print the effective settings as YAML and exit.")(
        func
    )
    func = click.option("--once", is_flag=True, help="Run one cycle and exit (status 1 if it failed).")(func)
    func = click.option(
        "--config",
        "config_file",
        default=None,
        metavar="FILE",
        help="YAML settings file (keys as in --dump-config) [env RTE_CONFIG].",
    )(func)
    return func


def settings_flags(options: dict[str, Any]) -> dict[str, Any]:
    """The setting flags among click's parameters, with "not given" as None."""
    names = {i.name for i in catalogue()}
    return {k: (v if v != () else None) for k, v in options.items() if k in names}
