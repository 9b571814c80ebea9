"""What what_it_starts_with.c reads in 5 fresh isolated children: each value that changes between
starts, with the drawn uids and with a count of steps as the uid (the control).
Usage: .venv/bin/python results/stop55/starts_probe.py"""
import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelgraph.agent.backends import bubblewrap
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import RED_TEAM, _PastAdmissionC, _what_it_starts_with

with tempfile.TemporaryDirectory() as cache:
    built = _PastAdmissionC(cache_dir=Path(cache), counters=False).compile(
        get_task("rmsnorm"), (RED_TEAM / "what_it_starts_with.c").read_text(), get_target("cpu-x86-64-v2"))
    for label in ("drawn uids", "control: a count of steps"):
        if label.startswith("control"):
            steps = itertools.count()
            bubblewrap.step_uid = lambda: (1 << 30) + next(steps)
        starts = [_what_it_starts_with(built.artifact) for _ in range(5)]
        print(label, "- constant:", sorted(k for k in starts[0] if len({s[k] for s in starts}) == 1))
        for key in starts[0]:
            if len({s[key] for s in starts}) > 1:
                print("  changes:", key, [s[key] for s in starts])
