"""How every command reports failure: one line on stderr, exit 2 for bad input, 1 for the rest.

Commands wrap their body in :func:`reports_errors`; it sits below :mod:`rte.cli` so that command
modules (``rte simulate`` defines its own click command) can use it without importing the CLI.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import click

from rte.errors import InputError, RteError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> NoReturn:
    """Print ``rte: error: <message>`` on stderr and exit with ``code``."""
    click.echo(f"rte: error: {message}", err=True)
    sys.exit(code)


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
