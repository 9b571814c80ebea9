"""`kernelgraph evaluate ...` with evaluator 8's rule (a pair with a parallel kernel in it counts only on
free cores) on or off (the red-team control): python evaluate_with.py on|off <evaluate's arguments>."""

import sys

from kernelgraph.agent.backends import isolated
from kernelgraph.cli import main

isolated.QUIET_PAIRS = sys.argv[1] == "on"  # QUIET_PARALLEL_PAIRS when these runs were made (4d3e97d)
sys.argv = ["kernelgraph", "evaluate", *sys.argv[2:]]
sys.exit(main())
