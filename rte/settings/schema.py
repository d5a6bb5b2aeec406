"""What a setting is: a dataclass field with :func:`setting` metadata, and a command's :class:`Schema`."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, Generic, TypeVar

# Kinds of setting. The annotation alone cannot tell a duration from a float or a path from a string.
STR = "str"
PATH = "path"
"""A file or directory; empty means none (``None``)."""
BOOL = "bool"
INT = "int"
FLOAT = "float"
DURATION = "duration"
"""Seconds, written with Go's units (``500ms``, ``1m30s``) or as a bare number of seconds (``2``),
the same in every command, flag, variable and file (:mod:`rte.durations`)."""
CHOICE = "choice"
"""One of ``choices`` (or of an enum's values), matched in any case."""
LIST = "list"
"""A tuple of ``item`` values: a YAML list; in a flag, repeated and/or comma-separated; in the
environment, separated by commas or whitespace."""

LOG_LEVELS = ("debug", "info", "warning", "error")

ENV_PREFIXES = ("RTE_", "RTE_EXTENDER_", "RTE_SIMULATE_")
"""Every command's environment prefix: a variable under ``RTE_`` that no command reads is
reported as unknown, except those of the longer prefixes, which belong to another command."""
OTHER_ENV = frozenset({"RTE_LOCAL_RUN_DIR", "RTE_HYPOTHESIS_PROFILE", "RTE_KERNEL_SEED"})
"""Variables under ``RTE_`` that are not settings: hack/run-local.sh's and the test suite's."""
"""The choices of every daemon's ``log_level`` setting (Python logging levels, in any case)."""

SETTING = "rte.setting"
"""The metadata key under which a field's :class:`Spec` is stored."""


@dataclass(frozen=True)
class Spec:
    """How one setting (or one item of a list setting) is read, checked and offered as a flag."""

    kind: str
    choices: tuple[str, ...] = ()
    enum: type[Enum] | None = None
    """CHOICE: the values are this enum's members (``choices`` come from its values)."""
    minimum: float | None = None
    above: float | None = None
    """Exclusive lower bound: the value must be greater than this."""
    maximum: float | None = None
    optional: bool = False
    """``None`` is a value (YAML ``null``, empty text)."""
    item: Spec | None = None
    """LIST: how each item is read."""
    check: Callable[[str, str], object] | None = None
    """Validates a text value: ``check(text, source)`` raises an :class:`~rte.errors.InputError`."""
    flag: str | None = None
    """The flag name when it differs from the field name (``weights`` -> ``weight``)."""
    aliases: tuple[str, ...] = ()
    """Further flag spellings, shown in the help (``--sysfs``)."""
    old_flags: tuple[str, ...] = ()
    """Former flag spellings still accepted, with a deprecation warning, but not shown; a boolean's
    ``--no-...`` one turns it off."""
    old_names: tuple[str, ...] = ()
    """Former names of the setting, accepted for one release with a deprecation warning: as a file
    key, as ``<PREFIX><NAME>`` in the environment and as a hidden ``--flag``."""
    env_aliases: tuple[str, ...] = ()
    """Further environment variables, read below the setting's own (``NODE_NAME``)."""
    metavar: str | None = None
    hidden: bool = False
    """No flag in the help (file and environment still work)."""

    @property
    def allowed(self) -> tuple[str, ...]:
        """The canonical spellings of a CHOICE."""
        if self.enum is not None:
            return tuple(str(m.value) for m in self.enum)
        return self.choices


def setting(kind: str, **options: Any) -> dict[str, Any]:
    """Field metadata that makes a dataclass field a setting.

    ``poll_interval: float = field(default=0.5, metadata=setting(DURATION, minimum=0.1))``
    """
    return {SETTING: Spec(kind, **options)}


@dataclass(frozen=True)
class FieldInfo:
    """One setting as loaders, flags and ``--dump-config`` see it."""

    name: str
    spec: Spec
    default: Any
    flag: str
    """``--poll-interval``"""
    env: str
    """``RTE_POLL_INTERVAL``"""
    owner: type

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def env_names(self) -> tuple[str, ...]:
        """The environment variables read for this setting, weakest first."""
        return (*self.spec.env_aliases, self.env)

    @property
    def old_flags(self) -> tuple[str, ...]:
        """Every former flag spelling: the spec's, then one per former name."""
        return (*self.spec.old_flags, *("--" + n.replace("_", "-") for n in self.spec.old_names))

    @property
    def doc(self) -> str:
        """The field's docstring on one line (parsed from the source on first use: help and dumps only)."""
        for cls in self.owner.__mro__:
            doc = _docstrings(cls).get(self.name)
            if doc:
                return doc
        return ""


T = TypeVar("T")


@dataclass(frozen=True)
class Schema(Generic[T]):
    """A command's settings: the dataclass, its environment prefix and its config-file variable.

    The dataclass must have an ``origins: Mapping[str, str]`` field (``compare=False``), which
    the loader fills with where each non-default value came from.
    """

    cls: type[T]
    env_prefix: str
    config_env: str
    """The environment variable naming a config file when ``--config`` is not given."""

    @functools.cached_property
    def fields(self) -> tuple[FieldInfo, ...]:
        out = []
        for f in fields(self.cls):  # type: ignore[arg-type]
            spec = f.metadata.get(SETTING)
            if spec is None:
                continue
            flag = spec.flag or f.name.replace("_", "-")
            env = self.env_prefix + flag.replace("-", "_").upper()
            out.append(FieldInfo(f.name, spec, f.default, "--" + flag, env, self.cls))
        return tuple(out)

    @functools.cached_property
    def by_name(self) -> Mapping[str, FieldInfo]:
        return {info.name: info for info in self.fields}

    @functools.cached_property
    def by_old_name(self) -> Mapping[str, FieldInfo]:
        """Former setting names -> the setting they are now."""
        return {old: info for info in self.fields for old in info.spec.old_names}

    def env_of(self, name: str) -> str:
        """The environment variable of a setting name (current or former)."""
        return self.env_prefix + name.upper()


@functools.cache
def _docstrings(cls: type) -> dict[str, str]:
    """Attribute docstrings of ``cls`` (a string right after an annotated field), from its source."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for stmt, after in itertools.pairwise(body):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[stmt.target.id] = " ".join(after.value.value.split())
    return docs
