"""`kernelgraph evaluate ...` with the rule for pairs with a parallel kernel on or off (the red-team control):
python evaluate_with.py on|off <evaluate's arguments>."""

import sys

from kernelgraph.agent.backends import isolated
from kernelgraph.cli import main

isolated.PARALLEL_PAIRS_BY_WALL_TOO = sys.argv[1] == "on"
sys.argv = ["kernelgraph", "evaluate", *sys.argv[2:]]
sys.exit(main())
