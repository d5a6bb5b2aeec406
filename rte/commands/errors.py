"""How every command reports failure: one line on stderr, exit 2 for bad input, 1 for the rest.

Commands wrap their body in :func:`reports_errors`; it sits below :mod:`rte.cli` so that command
modules (``rte simulate`` defines its own click command) can use it without importing the CLI.
Usage errors found by click itself (an unknown option, a bad choice, a missing ``--pod``) are
bad input too: :class:`OneLineGroup` reports them as one line with exit status 2, where click
would print the usage, a hint and a blank line around its message.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

import click

from rte.errors import InputError, RteError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    """Print ``rte: error: <message>`` on stderr and exit with ``code``."""
    click.echo(f"rte: error: {message}", err=True)
    sys.exit(code)


class OneLineGroup(click.Group):
    """A command group whose usage errors are one ``rte: error:`` line (exit 2), naming the command."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # `rte` alone: the help, as click shows it
            e.show()
            sys.exit(e.exit_code)
        except click.UsageError as e:
            where = e.ctx.command_path if e.ctx is not None else self.name
            fail(f"{where}: {e.format_message().rstrip('.')}; see {where} --help", 2)
        except click.ClickException as e:  # a click.File that cannot be opened, for one
            fail(e.format_message(), e.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        # Without standalone mode click returns the exit code of --help and --version, and a
        # command's return value otherwise (ours return None: success).
        sys.exit(code if isinstance(code, int) else 0)


def reports_errors(func: F) -> F:
    """Turn our errors into one line on stderr: exit 2 for bad input, 1 for anything else."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except InputError as e:
            fail(str(e), 2)
        except RteError as e:
            fail(str(e), 1)
        except BrokenPipeError:  # `rte dump | head`: the reader left; nothing to report
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except OSError as e:  # never a traceback
            fail(f"{e.filename or 'I/O'}: {e.strerror or e}", 1)

    return wrapper  # type: ignore[return-value]
