"""Every benchmark, study, demo and diagnostic the product ships: the `kernelgraph bench ...` commands'
experiments (kernelgraph/cli/ calls them), the diagnostics run as `python -m kernelgraph.bench.<name>`,
one statistics module (stats.py) and one report writer (reports.py)."""
