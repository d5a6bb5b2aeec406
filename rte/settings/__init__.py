"""Typed, layered settings for every long-running or scenario command (``rte run``, ``rte extender``,
``rte simulate``).

A command's settings are one frozen dataclass whose fields carry :func:`~rte.settings.schema.setting`
metadata (a kind such as duration or choice, bounds) and a docstring. From that one declaration
come:

* **flags**: ``--poll-interval 2s``, one per field (:mod:`rte.commands.options`), with the field's
  docstring, default and environment variable as help;
* **environment**: ``<PREFIX><FLAG>`` (``RTE_POLL_INTERVAL``, ``RTE_EXTENDER_LISTEN``); a list
  setting's items are separated by commas or whitespace there, by commas in a flag;
* **file**: a YAML mapping given with ``--config FILE`` (or ``<PREFIX>CONFIG``), keyed by field
  name; a key that is not a setting is an error naming the file and the key;
* **dump**: ``--dump-config`` prints the effective values as such a file, commented, which
  ``--config`` reads back to the same values.

Layers apply as defaults < file < environment < flags (:func:`~rte.settings.loader.load`). Each
value is converted and checked where it enters, so a mistake is one
:class:`~rte.errors.ConfigError` line naming the flag, variable or ``file: key``. Choices match
in any case and come back in their canonical spelling. Durations use Go's syntax
(:mod:`rte.durations`); a field says whether a bare number means seconds.
"""
