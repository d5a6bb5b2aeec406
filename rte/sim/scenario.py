"""What ``rte simulate`` reads: one run's :class:`~rte.sim.config.SimConfig`, and the sweep around it.

A scenario comes from flags, ``RTE_SIMULATE_*`` variables and a scenario file (``--config
FILE``, YAML, keyed by field name as in the JSON output's ``config``), layered as every rte
command's settings are (:mod:`rte.settings`). ``rte simulate ... --dump-config`` prints the
scenario as such a file, so ``rte simulate --config scenario.yaml`` repeats the same simulation,
byte for byte in its JSON (apart from the wall-clock ``timing``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from rte.errors import SettingError
from rte.settings.schema import BOOL, CHOICE, DURATION, INT, LIST, Schema, Spec, setting
from rte.sim.config import (
    CACHE_MODES,
    MAX_NODES,
    MAX_PODS,
    SWEEP_CACHES,
    SWEEP_INTERVALS,
    SWEEP_NODES,
    SimConfig,
)


@dataclass(frozen=True)
class Scenario(SimConfig):
    """A :class:`SimConfig`, and the sweep to run around it instead of the one run."""

    sweep: bool = field(default=False, metadata=setting(BOOL))
    """Run the headline sweep (agent interval x cache x nodes) instead of one run."""
    sweep_nodes: tuple[int, ...] = field(
        default=(), metadata=setting(LIST, item=Spec(INT, minimum=1, maximum=MAX_NODES), metavar="N,...")
    )
    """Sweep these cluster sizes (implies the sweep; empty: --nodes if given, else 100,1000); pods and
    bursts scale along."""
    sweep_intervals: tuple[float, ...] = field(
        default=(), metadata=setting(LIST, item=Spec(DURATION), metavar="DURATION,...")
    )
    """Sweep these agent intervals (implies the sweep; empty: --agent-interval if given, else
    1s,10s,60s)."""
    sweep_caches: tuple[str, ...] = field(
        default=(), metadata=setting(LIST, item=Spec(CHOICE, choices=CACHE_MODES), metavar="CACHE,...")
    )
    """Sweep these cache modes (implies the sweep; empty: --cache if given, else
    none,reference-reserve,reserve,oracle)."""

    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Where each non-default value came from (``--flag``, ``RTE_SIMULATE_X``, ``<file>: key``)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sweeping:
            self._resolve_sweep()
        for nodes in self.sweep_nodes:
            pods = round(self.pods * nodes / self.nodes)  # as rte.sim.sweep.scaled resizes the workload
            if pods > MAX_PODS:
                raise SettingError(
                    "sweep_nodes",
                    f"{nodes} nodes scale the pods to {pods:,}, above the limit of {MAX_PODS:,}",
                )

    def _resolve_sweep(self) -> None:
        """Each sweep dimension not given is its one-run setting when that was given (``--sweep
        --nodes 50`` sweeps 50 nodes; it used to sweep 100 and 1000 regardless), else the
        headline values; resolved here, so ``--dump-config`` writes what will run."""
        given = self.origins
        for dimension, one_run, headline in (
            ("sweep_nodes", "nodes", SWEEP_NODES),
            ("sweep_intervals", "agent_interval", SWEEP_INTERVALS),
            ("sweep_caches", "cache", SWEEP_CACHES),
        ):
            if not getattr(self, dimension):
                value = (getattr(self, one_run),) if one_run in given else headline
                object.__setattr__(self, dimension, tuple(value))

    @property
    def sweeping(self) -> bool:
        """Whether this scenario is a sweep (asked for, or any sweep dimension given)."""
        return self.sweep or bool(self.sweep_nodes or self.sweep_intervals or self.sweep_caches)

    def run_config(self) -> SimConfig:
        """The one run's configuration (the sweep's base)."""
        return SimConfig(**{f.name: getattr(self, f.name) for f in fields(SimConfig)})


SCENARIO_SCHEMA = Schema(Scenario, env_prefix="RTE_SIMULATE_", config_env="RTE_SIMULATE_CONFIG")
