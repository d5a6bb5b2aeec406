"""Command line entry point (placeholder until the commands land)."""

import click


@click.group()
def main() -> None:
    """rte: NUMA resource topology exporter and consumer."""
