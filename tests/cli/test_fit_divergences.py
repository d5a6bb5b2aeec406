"""``rte fit`` on the hand-made nodes of ``examples/divergences``: the kubelet's verdict by default,
the reference plugin's with ``--compat reference``, for each case where they differ (each pod
file says why), and for a pod both admit under ``restricted`` because a preferred mask exists."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rte.cli import main
from tests.helpers.paths import REPO

EXAMPLES = REPO / "examples" / "divergences"


def verdicts(pod: str, *options: str) -> dict[str, tuple[bool, str]]:
    result = CliRunner().invoke(
        main, ["fit", "--pod", str(EXAMPLES / pod), str(EXAMPLES / "nrts.yaml"), "-o", "json", *options]
    )
    assert result.exit_code == 0, result.output
    return {d["node"]: (d["fits"], d["reason"]) for d in json.loads(result.stdout)}


@pytest.mark.parametrize(
    ("pod", "node", "kubelet", "reason", "reference"),
    [
        (
            "pod-wide-cpus.yaml",
            "restricted",
            False,
            "restricted: best merged hint {0,1} is not preferred (cpu wants 2 zones, memory 1)",
            True,
        ),
        ("pod-wide.yaml", "restricted", True, "fits NUMA zones {0,1}", True),
        (
            "pod-init-pinning.yaml",
            "host0",
            False,
            'single-numa-node: no single NUMA zone holds cpu=20 for container "cnt-2"',
            True,
        ),
        (
            "pod-sidecar.yaml",
            "small",
            False,
            'single-numa-node: no single NUMA zone holds cpu=3 for container "app"',
            True,
        ),
        ("pod-overhead.yaml", "tight", True, "fits NUMA zone 0", False),
        ("pod-fractional.yaml", "busy", True, "fits NUMA zone 0", False),
    ],
)
def test_rte_fit_gives_the_kubelets_verdict_and_the_reference_on_request(
    pod: str, node: str, kubelet: bool, reason: str, reference: bool
) -> None:
    assert verdicts(pod)[node] == (kubelet, reason)
    assert verdicts(pod, "--compat", "reference")[node][0] is reference
