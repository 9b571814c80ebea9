"""Stop 64: which of setpriv's options puts matmul best-A in the slow state? bwrap_flags_probe.out: the
confined child without setpriv was slow in 5 of 20 evaluations (unconfined 5, as shipped 19). Here setpriv
with one option (or group) removed, and setpriv with the uid and gid switch alone (the
uid alone cannot open the buffers, which the sandbox's group owns); one uid for every step (`fixed-uid`); and
the sandbox's /etc readable (`etc-readable`: the loader reads ld.so.cache as it does as root). Output: setpriv_probe.out.
Usage: python setpriv_probe.py REPEATS [ARM,...]   (as root)"""

import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from kernelgraph.agent.backends import bubblewrap
from kernelgraph.agent.backends.bubblewrap import Sandbox
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.timing import ISOLATED
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

SLOW_MS = 2.5


class Setpriv(Sandbox):
    """The timed child's command with setpriv's options filtered by `keep(option)`."""

    def __init__(self, keep) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        object.__setattr__(self, "keep", keep)

    def command(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        cmd = super().command(argv, **kwargs)
        if "serve-loop" not in argv[0]:  # the build and the check as shipped: only the timed child varies
            return cmd
        at = cmd.index("/usr/bin/setpriv")
        end = cmd.index("--", at)
        return cmd[: at + 1] + [o for o in cmd[at + 1 : end] if self.keep(o)] + cmd[end:]


class FixedUid(Sandbox):
    """The timed child as shipped but under one uid for every step (SANDBOX_UID, as STEP_UIDS=False)."""

    def command(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        cmd = super().command(argv, **kwargs)
        if "serve-loop" not in argv[0]:
            return cmd
        return [f"--reuid={bubblewrap.SANDBOX_UID}" if o.startswith("--reuid=") else o for o in cmd]


class EtcReadable(Sandbox):
    """The timed child as shipped, with the sandbox's /etc made 0755 (bwrap made it 0700 for the
    ld.so.cache bind, so no step's uid could read the cache; root could)."""

    def command(self, argv, **kwargs):  # type: ignore[no-untyped-def, override]
        cmd = super().command(argv, **kwargs)
        at = cmd.index("/etc/ld.so.cache") - 1  # --ro-bind
        return cmd[:at] + ["--perms", "0755", "--dir", "/etc"] + cmd[at:]


target = get_target("cpu-x86-64-v2")
ARMS = {
    "shipped": Sandbox(),
    "no-reuid": Setpriv(lambda o: not o.startswith("--reuid")),
    "no-caps": Setpriv(lambda o: not o.startswith(("--inh-caps", "--bounding-set"))),
    "no-nnp": Setpriv(lambda o: o != "--no-new-privs"),
    "ids-only": Setpriv(lambda o: o.startswith(("--reuid", "--regid", "--clear-groups"))),
    "nothing": Setpriv(lambda o: False),
    "fixed-uid": FixedUid(),
    "etc-readable": EtcReadable(),
}
repeats = int(sys.argv[1])
if len(sys.argv) > 2:
    ARMS = {arm: ARMS[arm] for arm in sys.argv[2].split(",")}
task = get_task("matmul")
source = task.source("c", checked_configs(task)["best-A"])
runs: dict[str, list[float]] = {arm: [] for arm in ARMS}
with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp) / arm, counters=False, sandbox=sandbox,
                              timing=replace(BENCH_TIMING, protocol=ISOLATED))
                for arm, sandbox in ARMS.items()}
    for repeat in range(repeats):
        order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
        for arm in order:
            runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"] / 1e6)
        print(f"  repeat {repeat}: " + " ".join(f"{a} {runs[a][-1]:.3f}" for a in ARMS), flush=True)
print(f"matmul:best-A: {repeats} repeats")
for arm, values in runs.items():
    slow = sum(v >= SLOW_MS for v in values)
    print(f"  {arm:16s} median {statistics.median(values):.3f} ms; slow state (>= {SLOW_MS} ms) in {slow} of {len(values)}")
