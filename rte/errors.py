"""The one exception hierarchy of rte.

Edges (file readers, the gRPC client, the publisher) catch library exceptions and raise one of
these ``from`` the original, so callers handle a handful of types and tracebacks keep the cause.
The CLI turns :class:`InputError` into a one-line message and exit status 2, and any other
:class:`RteError` into a one-line message and exit status 1.
"""

from __future__ import annotations

import re

# Every character str.splitlines() breaks at: a name or value from a file may hold any of them.
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with its line breaks escaped (``"a\\nb"``), so a message stays one line."""
    return _LINE_BREAKS.sub(lambda m: repr(m.group())[1:-1], text)


class RteError(Exception):
    """Base class of every error rte raises on purpose."""


class InputError(RteError):
    """Bad data from outside: a malformed file, field or value.

    ``source`` names where it came from (a path, a field, a flag) so the message alone is enough
    to find and fix it. Both are kept to one line: a field name read from a file can hold a
    line break, and the CLI prints the message as one line.
    """

    def __init__(self, source: str, detail: str) -> None:
        source, detail = one_line(source), one_line(detail)
        super().__init__(f"{source}: {detail}")
        self.source = source
        self.detail = detail


class ConfigError(InputError):
    """An invalid setting (config file, environment variable or flag)."""


class SettingError(ConfigError):
    """A setting's value is invalid, found where the value is used rather than where it was typed.

    ``field`` is the setting's name; the settings loader replaces it with the layer the value
    came from (``--flag``, ``RTE_X`` or ``file: key``), so the user sees where to fix it.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(field, detail)
        self.field = field


class UnavailableError(RteError):
    """A peer (kubelet, apiserver) cannot be reached right now; retrying may help."""


class PublishError(RteError):
    """Writing the NodeResourceTopology object failed."""


class NotSupportedError(UnavailableError):
    """The peer is up but does not offer this call (an older kubelet, or a feature gate is off).

    A subclass of :class:`UnavailableError` so generic handlers still treat it as "cannot get
    this now", while callers that can degrade (skip ``GetAllocatableResources``, avoid ``Get``)
    catch it specifically instead of retrying forever.
    """
