"""Stop 64: which part of bubblewrap's confinement puts matmul best-A in the slow state? Stop 63 found the
isolated child slow in most evaluations confined and in few unconfined, whatever the seccomp filter,
clocks, input mode or layout (isolated_toggles_probe.out). Here the confined command with one part
removed at a time: the network, PID (with IPC, UTS, cgroup) namespaces, setpriv's uid switch,
--die-with-parent, --new-session, and all of bwrap's namespaces at once. Output: bwrap_flags_probe.out.
Usage: python bwrap_flags_probe.py REPEATS [ARM,...]   (as root)"""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

SLOW_MS = 2.5
NAMESPACES = ("--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try")


class Without(Sandbox):
    """The sandbox's command without `dropped` flags; "setpriv" drops the uid switch (setpriv and its
    options up to its `--`)."""

    def __init__(self, *dropped: str) -> None:
        super().__init__()
        object.__setattr__(self, "dropped", dropped)

    def command(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        cmd = super().command(argv, **kwargs)
        if "setpriv" in self.dropped:
            at = cmd.index("/usr/bin/setpriv")
            cmd = cmd[:at] + cmd[cmd.index("--", at) + 1:]
        if "--unshare-uts" in self.dropped:  # bwrap sets a hostname only in its own UTS namespace
            at = cmd.index("--hostname")
            cmd = cmd[:at] + cmd[at + 2:]
        return [c for c in cmd if c not in self.dropped]


target = get_target("cpu-x86-64-v2")
ARMS = {
    "isolated": (ISOLATED, Sandbox()),
    "no-netns": (ISOLATED, Without("--unshare-net")),
    "no-pidns": (ISOLATED, Without("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")),
    "no-namespaces": (ISOLATED, Without(*NAMESPACES)),
    "no-setpriv": (ISOLATED, Without("setpriv")),
    "no-die-session": (ISOLATED, Without("--die-with-parent", "--new-session")),
    "unconfined": (ISOLATED, Sandbox(enabled=False)),
    "in-process": (IN_PROCESS, Sandbox()),
}
repeats = int(sys.argv[1])
if len(sys.argv) > 2:
    ARMS = {arm: ARMS[arm] for arm in sys.argv[2].split(",")}
task = get_task("matmul")
source = task.source("c", checked_configs(task)["best-A"])
runs: dict[str, list[float]] = {arm: [] for arm in ARMS}
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp) / arm, counters=False, sandbox=sandbox,
                              timing=replace(BENCH_TIMING, protocol=protocol))
                for arm, (protocol, sandbox) in ARMS.items()}
    for repeat in range(repeats):
        order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
        for arm in order:
            runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"] / 1e6)
        print(f"  repeat {repeat}: " + " ".join(f"{a} {runs[a][-1]:.3f}" for a in ARMS), flush=True)
print(f"matmul:best-A: {repeats} repeats")
for arm, values in runs.items():
    slow = sum(v >= SLOW_MS for v in values)
    print(f"  {arm:16s} median {statistics.median(values):.3f} ms; slow state (>= {SLOW_MS} ms) in {slow} of {len(values)}")
