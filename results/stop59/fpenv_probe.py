"""The floating-point environment a kernel runs in (MXCSR: FTZ 0x8000, DAZ 0x40; the x87 control word)
in each protocol's child: the probe kernel writes them into its output."""
import contextlib, sys, tempfile, time
from pathlib import Path
import numpy as np
from kernelgraph.agent.backends import isolated
from kernelgraph.agent.backends.bubblewrap import scratch_dir
from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.isolated import KernelServer
from kernelgraph.agent.backends.sandbox import SandboxLimits
from kernelgraph.agent.evaluator import output_specs
from kernelgraph.agent.tasks import get_task
from kernelgraph.agent.targets import get_target

PROBE = """#include <stdint.h>
void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    volatile int part[256];
    for (int i = 0; i < 256; i++) part[i] = i;
    int64_t *o = (int64_t *)y;
    o[0] = (int64_t)(intptr_t)__builtin_ia32_stmxcsr();
    o[1] = 0; { unsigned short cw; __asm__ volatile("fnstcw %0" : "=m"(cw)); o[1] = cw; };
}
"""
task = get_task("rmsnorm")
backend = CBackend(cache_dir=Path(tempfile.mkdtemp()), check_timeout_s=20.0, counters=False)
built = backend.compile(task, PROBE, get_target("cpu-x86-64-v2"))
assert built.ok, built.diagnosis
inputs = task.make_inputs(7, True)
limits = SandboxLimits(timeout_s=20.0, memory_bytes=768 << 20, threads=1)
for attempt in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    with scratch_dir("kg-probe-") as work, isolated.shared_inputs(inputs, output_specs(task, inputs)) as shared:
        server = KernelServer(built.artifact, shared, list(task.sizes(inputs).values()), limits, work)
        try:
            deadline = time.monotonic() + 20
            server.wait_ready(deadline); server.freeze()
            isolated.call_overhead([server], deadline, lambda *_: None)
            server.load_kernel(deadline)
            server.call(deadline)
            frame, part = (int(v) for v in np.ascontiguousarray(server.outputs[0]).ravel().view(np.int64)[:2])
            print(f"isolated child {attempt}: MXCSR {frame:#06x} x87 control {part:#06x}")
        finally:
            server.close()
print("artifact", built.artifact)

from kernelgraph.agent.backends.sandbox import SharedObjectRunner
runner = SharedObjectRunner(built.artifact, list(task.sizes(inputs).values()), limits)
for attempt in range(3):
    report = runner([inputs], output_specs(task, inputs))
    assert report.outputs, report.message
    frame, part = (int(v) for v in np.ascontiguousarray(report.outputs[0]["y"]).ravel().view(np.int64)[:2])
    print(f"in-process child {attempt}: MXCSR {frame:#06x} x87 control {part:#06x}")
