"""Stop 63: is matmul best-A's isolated excess the hand-over (the FIFOs, the freeze between calls) or
the inputs written by another process? results/stop63/handover_harness.c, on the isolated protocol's
buffers (files on a huge=within_size tmpfs, mapped shared), in four arms beside the two protocols'
evaluations (30 trials):
  plain        the harness loops by itself, writing, poisoning and flushing before each call;
  fifo-self    the same, each call handed over by this driver through two FIFOs (as serve_loop.c);
  stop-self    ... and the harness stopped (SIGSTOP) after each call, continued (SIGCONT) before the next;
  stop-driver  ... and this driver, not the harness, writes the variant, poisons the outputs and flushes
               (as the evaluator): the isolated child's call, without bwrap, the filters or the clocks hidden;
  stop-driver-check ... and the driver computes the task's reference from the call's inputs first, on
               the call's CPU (the evaluator's checking work between calls, in full).
The driver runs on the harness's CPU (drawn per run), as the evaluator's hand-over does (`_on_cpu_of`).
Arm order rotated per repeat; ratios paired by repeat over `plain`. Output: handover_probe.out.
Usage: gcc -O2 -mclflushopt results/stop63/handover_harness.c -o /tmp/handover_harness -ldl -lm, then
python handover_probe.py REPEATS task:config ...   (as root)"""

import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from kernelgraph.agent.backends._child import variant_factors
from kernelgraph.agent.backends.bubblewrap import scratch_dir
from kernelgraph.agent.backends.c import TIMING_SEED, CBackend
from kernelgraph.agent.backends.isolated import buffer_layout, file_bytes, flush_cached
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED
from kernelgraph.agent.evaluator import make_input_sets, output_specs
from kernelgraph.agent.targets import get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.bench.configs import checked_configs
from kernelgraph.bench.sandbox import BENCH_TIMING, _evaluate_once

HARNESS = "/tmp/handover_harness"
WARMUP, CALLS = BENCH_TIMING.warmup, 30
HARNESS_ARMS = {"plain": ("none", "self", False, False), "fifo-self": ("fifo", "self", False, False),
                "stop-self": ("fifo", "self", True, False), "stop-driver": ("fifo", "driver", True, False),
                "stop-driver-check": ("fifo", "driver", True, True)}
TASK = None  # the cell's task: stop-driver-check computes its reference before each call (`harness_run`)
ARMS = ("isolated", "in-process", *HARNESS_ARMS)
REFERENCE = "plain"
KIND = {"f4": "f", "i4": "s", "i8": "l"}
POISON = {"f": np.float32(np.nan), "s": np.int32(np.iinfo(np.int32).min), "l": np.int64(np.iinfo(np.int64).min)}
target = get_target("cpu-x86-64-v2")
draw = random.Random(6363)
allowed = sorted(os.sched_getaffinity(0))


def harness_run(artifact, base, specs, sizes, cpu, arm, buffers=None):
    """The harness's median CPU time a call (first turn of each pair); `buffers`: a directory whose
    buffer files are used again (created when missing), else fresh files in a fresh tmpfs."""
    with contextlib.ExitStack() as stack:
        tmp = buffers if buffers is not None else stack.enter_context(scratch_dir("kg-probe-"))
        return _harness_run(artifact, base, specs, sizes, cpu, arm, tmp)


def _harness_run(artifact, base, specs, sizes, cpu, arm, tmp):
    handover, writer, stop, check = HARNESS_ARMS[arm]
    layout = buffer_layout(base, specs)
    factors = variant_factors(max(a.size for a in base.values()), WARMUP + CALLS, draw.randrange(1 << 30))
    with tempfile.TemporaryDirectory() as fifos:
        paths = {name: tmp / f"{name}.bin" for name in ("inputs", "outputs")}
        for name, nbytes in (("inputs", layout.input_bytes), ("outputs", layout.output_bytes)):
            if not paths[name].exists():
                with open(paths[name], "wb") as f:
                    f.truncate(file_bytes(nbytes))
        maps = {name: np.memmap(paths[name], dtype=np.uint8, mode="r+") for name in paths}
        data = tmp / "data.bin"
        with open(data, "wb") as f:
            for a in base.values():
                f.write(np.ascontiguousarray(a).tobytes())
            f.write(factors[: max(a.size for a in base.values() if a.dtype.kind == "f") + WARMUP + CALLS].tobytes())
        kinds = [KIND[np.dtype(d).str[1:]] for _, _, d in layout.inputs]
        specs_arg = [f"i:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{k}" for (o, s, d), k in zip(layout.inputs, kinds)]
        specs_arg += [f"o:{o}:{int(np.prod(s)) * np.dtype(d).itemsize}:{KIND[np.dtype(d).str[1:]]}"
                      for o, s, d in layout.outputs]
        go, done = Path(fifos) / "go", Path(fifos) / "done"
        os.mkfifo(go)
        os.mkfifo(done)
        argv = ["/usr/bin/taskset", "-c", str(cpu), HARNESS, artifact, str(paths["inputs"]), str(paths["outputs"]),
                str(data), str(go), str(done), str(WARMUP), str(CALLS), str(layout.input_bytes),
                str(layout.output_bytes), ",".join(str(int(s)) for s in sizes), *specs_arg]
        env = {**os.environ, "HANDOVER": handover, "WRITER": writer}
        if handover == "none":
            text = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=300, env=env).stdout
        else:
            inputs = [maps["inputs"][o: o + int(np.prod(s)) * np.dtype(d).itemsize].view(d) for o, s, d in layout.inputs]
            outputs = [maps["outputs"][o: o + int(np.prod(s)) * np.dtype(d).itemsize].view(d) for o, s, d in layout.outputs]
            bases = [np.ascontiguousarray(a).ravel() for a in base.values()]
            home = os.sched_getaffinity(0)
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            os.sched_setaffinity(0, {cpu})
            try:
                go_fd, done_fd = os.open(go, os.O_WRONLY), os.open(done, os.O_RDONLY)
                for call in range(WARMUP + CALLS):
                    for turn in range(2):
                        if writer == "driver":
                            if turn == 0:
                                for view, b, (_, _, d) in zip(inputs, bases, layout.inputs):
                                    if np.dtype(d).kind == "f":
                                        np.multiply(b, factors[call: call + b.size], out=view)
                                    else:
                                        view[:] = b
                            for view, (_, _, d) in zip(outputs, layout.outputs):
                                view[:] = POISON[KIND[np.dtype(d).str[1:]]]
                            if check:  # the evaluator's checking work, on this CPU, before the call
                                TASK.reference(dict(zip(base, (v.reshape(s) for v, (_, s, _) in zip(inputs, layout.inputs)))))
                            flush_cached(maps["inputs"][: layout.input_bytes])
                            flush_cached(maps["outputs"][: layout.output_bytes])
                        if stop:
                            os.kill(proc.pid, signal.SIGCONT)
                        os.write(go_fd, b"c")
                        assert os.read(done_fd, 1) == b"d"
                        if stop and (call, turn) != (WARMUP + CALLS - 1, 1):  # after the last, it exits
                            os.kill(proc.pid, signal.SIGSTOP)
                            os.waitpid(proc.pid, os.WUNTRACED)
                out, err = proc.communicate(timeout=300)
                os.close(go_fd)
                os.close(done_fd)
            finally:
                os.sched_setaffinity(0, home)
            assert proc.returncode == 0, err
            text = out.decode()
        del maps
    return statistics.median(int(line.split()[1]) for line in text.splitlines() if line.startswith("0 "))


with tempfile.TemporaryDirectory() as tmp:
    backends = {arm: CBackend(cache_dir=Path(tmp) / "cache", counters=False,
                              timing=replace(BENCH_TIMING, min_trials=CALLS, max_trials=CALLS, protocol=p))
                for arm, p in (("isolated", ISOLATED), ("in-process", IN_PROCESS))}
    repeats = int(sys.argv[1])
    for cell in sys.argv[2:]:
        name, label = cell.split(":")
        task = TASK = get_task(name)
        source = task.source("c", checked_configs(task)[label])
        built = backends["isolated"].compile(task, source, target)
        base = make_input_sets(task, (TIMING_SEED,), small=False)[0]
        specs, sizes = output_specs(task, base), list(task.sizes(base).values())
        runs = {arm: [] for arm in ARMS}
        for repeat in range(repeats):
            order = list(ARMS)[repeat % len(ARMS):] + list(ARMS)[: repeat % len(ARMS)]
            for arm in order:
                if arm in backends:
                    runs[arm].append(_evaluate_once(task, target, source, backends[arm])["median_ns"])
                else:
                    runs[arm].append(harness_run(built.artifact, base, specs, sizes, draw.choice(allowed), arm))
            print(f"  repeat {repeat}: " + " ".join(f"{a} {runs[a][-1] / 1e6:.3f}" for a in ARMS), flush=True)
        print(f"{cell}: {repeats} repeats, load {os.getloadavg()[0]:.2f}", flush=True)
        for arm in ARMS:
            ratios = [a / c for a, c in zip(runs[arm], runs[REFERENCE])]
            print(f"  {arm:12s} median {statistics.median(runs[arm]) / 1e6:7.3f} ms  over {REFERENCE} "
                  f"{statistics.median(ratios):.3f}  [{' '.join(f'{r:.3f}' for r in ratios)}]", flush=True)
