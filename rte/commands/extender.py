"""``rte extender``: load the settings, then serve (or print them with ``--dump-config``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from rte.extender.settings import EXTENDER_SCHEMA, resolve
from rte.settings.loader import load, render_settings


def extender(
    *,
    config_file: str | None,
    flags: Mapping[str, Any],
    dump_config: bool = False,
    out: TextIO | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """The ``rte extender`` command; raises :class:`~rte.errors.RteError` subclasses for the CLI."""
    options = load(EXTENDER_SCHEMA, config_file=config_file, env=env, flags=flags)
    settings = resolve(options)
    if dump_config:
        (out or sys.stdout).write(render_settings(EXTENDER_SCHEMA, options))
        return
    from rte.extender.app import run_extender

    logging.basicConfig(
        level=getattr(logging, options.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run_extender(settings)
