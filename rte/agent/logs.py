"""Logging setup of the agent: plain text lines or JSON lines on stderr.

JSON records carry ``ts`` (RFC 3339, UTC, milliseconds), ``level``, ``logger`` and ``msg``, plus
every field passed with ``extra={...}`` and ``error`` with the traceback of an exception. Text
lines show the same fields as ``key=value`` after the message, so neither format loses data.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, TextIO

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _timestamp(record: logging.LogRecord) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{seconds}.{int(record.msecs):03d}Z"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in _fields(record).items():
            out.setdefault(key, value)
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        extra = _fields(record)
        if extra:
            line += " " + " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in extra.items())
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str = "info", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Send the ``rte`` loggers (and warnings of libraries) to ``stream`` (default stderr)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    # Libraries stay at warning, so debug means "debug rte", not "dump every HTTP header".
    root.setLevel(logging.WARNING)
    logging.getLogger("rte").setLevel(level.upper())
