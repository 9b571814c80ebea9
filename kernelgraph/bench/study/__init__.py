"""Study v2, the thesis measured (`kernelgraph bench study`): does retrieval keyed on a kernel's measured
counter signature pick better transforms than source text, task labels, a global prior, no memory or an
autotuner, at matched budgets, on instances and families never seen? docs/results.md declares the
protocol; this package runs it unchanged.

Everything a run observes comes from measured landscapes (kernelgraph/bench/landscapes.py): every config of
each task timed at each instance, twice (landscapes A and B, measured independently). A run searches
on one landscape and the config it reaches is scored on the other, so a lucky timing cannot make a
run look good. Retrieval goes through the real service on a local Neo4j: the experience is recorded
there as attempts (each from its parent's measured state: a profile with counters at the timed size),
and each evaluation run retrieves once, for the measured state of the kernel it starts from.

The modules, in the order a run uses them:
- `protocol`: the declared constants, the arms and the plan;
- `landscapes`: a measured landscape as the study reads it, and how a reached config is scored on it;
- `simulation`: a run simulated on a landscape (the loop's rules, the real proposers, or TPE);
- `experience`: the memoryless runs recorded as the graph's experience;
- `arms`: what each arm retrieves (within the query's vocabulary) and how it searches;
- `run`: one run of the study, end to end;
- `statistics`: fractions of the oracle, paired ratios and their CIs (kernelgraph/bench/stats.py), verdicts;
- `report`: the plots, the generated results page and the demo's headline;
- `mechanism`: the controlled mechanism check of `--quick`.
"""
