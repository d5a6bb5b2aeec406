"""Former flag names of the commands without a settings schema (``rte dump``, ``rte fingerprint``,
``rte explain``): kept hidden for one release, each use warned about on one line.

The settings commands get theirs from :attr:`rte.settings.schema.Spec.old_names`; both print the
same warning (:func:`rte.settings.loader.deprecated`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def former_flag(old: str, dest: str, **option: Any) -> Callable[[F], F]:
    """Accept ``old`` (hidden) for the option whose parameter is ``dest``.

    The current flag wins when both are given; its name in the warning is read from the command.
    ``option``: further :func:`click.option` arguments (``type``, ``multiple``), as the current one's.
    """
    hidden = f"{dest}__former"

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(hidden, None)
            if value is None or value == ():
                return func(*args, **kwargs)
            from click.core import ParameterSource

            from rte.settings.loader import deprecated, stderr_warning

            ctx = click.get_current_context()
            current = next(p for p in ctx.command.params if p.name == dest)
            stderr_warning(deprecated(old, max(current.opts, key=len)))
            if ctx.get_parameter_source(dest) in (ParameterSource.DEFAULT, None):
                kwargs[dest] = value
            return func(*args, **kwargs)

        hidden_option = click.option(old, hidden, default=None, hidden=True, **option)
        return hidden_option(wrapper)  # type: ignore[return-value]

    return decorate
