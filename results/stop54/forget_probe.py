"""What test_a_timed_kernel_has_no_clock's kernel finds in its reach (read_the_clock.c), three ways:
the child as it is (evaluator 16 and the scan that forgets the readings of the clocks), the same
child with the scan taken out (stop 53's), and the clocks left to the kernel (the control).
usage: .venv/bin/python results/stop54/forget_probe.py [ROUNDS]"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kernelgraph.agent.backends import isolated  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from tests.agent.test_red_team import QUICK, _PastAdmissionC, _read_the_clock  # noqa: E402

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
backend = _PastAdmissionC(cache_dir=Path(tempfile.mkdtemp(prefix="forget-")), check_timeout_s=10.0,
                          memory_bytes=768 << 20, timing=QUICK, counters=False)
target = get_target("cpu-x86-64-v2")
source = isolated.SERVE_LOOP_SOURCE.read_text()
call = "    if (hide_clocks && !forget_after_load) kg_forget_the_time();\n"
assert call in source
without = Path(tempfile.mkdtemp(prefix="serve-no-scan-")) / "serve_loop.c"
without.write_text(source.replace(call, ""))


def run(name: str, clocks: bool, serve_source: Path) -> None:
    isolated.CLOCKLESS_KERNELS = clocks
    isolated.SERVE_LOOP_SOURCE = serve_source
    isolated.serve_loop_binary.cache_clear()
    for _ in range(rounds):
        seen, readings = _read_the_clock(backend, target)
        gave = sum(v == 1.0 for v in seen.values())
        print(f"{name:28s} ways that gave the time {gave:2d}/{len(seen)}  readings found: "
              + ", ".join(f"{clock} {len(found)}" for clock, found in readings.items()), flush=True)


original = isolated.SERVE_LOOP_SOURCE
run("guarded (the scan)", True, original)
run("guarded, scan taken out", True, without)
run("control (clocks left)", False, original)
