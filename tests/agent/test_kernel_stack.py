"""Both timing protocols call a kernel with its stack at one declared place within a page
(agent/backends/kernel_call.h): a kernel's stack scratch aliases its inputs as the two sit modulo
4 KiB, so a place left to the caller's frames and the process's randomised stack moved histogram's
baseline by up to 30% from one in-process evaluation to the next (docs/sandbox.md#one-stack-place)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelgraph.agent.backends.c import CBackend
from kernelgraph.agent.backends.native import KERNEL_CALL_HEADER
from kernelgraph.agent.backends.sandbox import SandboxLimits, SharedObjectRunner
from kernelgraph.agent.evaluator import output_specs
from kernelgraph.agent.target import Target
from kernelgraph.agent.tasks import get_task
from tests.agent.test_red_team import _calibrated_and_loaded

# rmsnorm's signature; the kernel writes where its frame is into its output (y[0..1] as one int64).
FRAME_PROBE = """#include <stdint.h>
void kernel(const float* restrict x, const float* restrict w, float* restrict y, int r, int c) {
    *(int64_t *)y = (int64_t)(intptr_t)__builtin_frame_address(0);
}
"""
PAGE = 4096


def declared_frame() -> int:
    found = re.search(r"#define KG_KERNEL_FRAME (0x[0-9a-f]+)", KERNEL_CALL_HEADER.read_text())
    assert found
    return int(found.group(1), 16)


def frame_of(y: np.ndarray) -> int:
    return int(np.ascontiguousarray(y).ravel().view(np.int64)[0])


@pytest.fixture(scope="module")
def probe(backend: CBackend, cpu_target: Target) -> str:
    built = backend.compile(get_task("rmsnorm"), FRAME_PROBE, cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    return built.artifact


def test_both_protocols_call_a_kernel_with_its_frame_at_the_declared_place(probe: str) -> None:
    """Three fresh children of each protocol: the probe's frame at `KG_KERNEL_FRAME` within a page in
    every one (the in-process child's stack is randomised, the isolated one's is not)."""
    task = get_task("rmsnorm")
    inputs = task.make_inputs(7, True)
    specs, sizes = output_specs(task, inputs), list(task.sizes(inputs).values())
    limits = SandboxLimits(timeout_s=20.0, memory_bytes=768 << 20, threads=1)
    in_process, in_isolation = [], []
    for _ in range(3):
        report = SharedObjectRunner(probe, sizes, limits)([inputs], specs)
        assert report.outputs, report.message
        in_process.append(frame_of(report.outputs[0]["y"]))
        with _calibrated_and_loaded(probe, small=True, threads=1) as (server, deadline, _):
            server.call(deadline)
            in_isolation.append(frame_of(server.outputs[0]))
    assert {f % PAGE for f in in_process} == {f % PAGE for f in in_isolation} == {declared_frame()}, (
        [hex(f) for f in in_process],
        [hex(f) for f in in_isolation],
    )


def test_control_called_as_before_the_frame_moves_from_one_process_to_the_next(probe: str) -> None:
    """What the declared place removes: called straight through ctypes, as the in-process child did
    until evaluator 18, the frame sits wherever the process's randomised stack puts it."""
    if Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0":
        pytest.skip("this host does not randomise stacks: no process would differ from the next")
    call = (
        "import ctypes, numpy as np\n"
        f"kernel = ctypes.CDLL({probe!r}).kernel\n"
        "y = np.zeros(4, np.float32)\n"
        "kernel(None, None, ctypes.c_void_p(y.ctypes.data), 1, 1)\n"
        "print(int(y.view(np.int64)[0]) % 4096)\n"
    )
    places = {int(subprocess.run([sys.executable, "-c", call], capture_output=True, text=True, check=True).stdout)
              for _ in range(8)}  # fmt: skip
    assert len(places) > 1, places
