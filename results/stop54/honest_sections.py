"""Whether any honest C config (each CPU task's baseline and 12 sampled configs, at x86-64-v2 and v3) has a
writable allocated section with data in kernel.o, which admission 8 refuses. Stop 54: 312 objects, 0.
usage: .venv/bin/python results/stop54/honest_sections.py"""
import random, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from kernelgraph.agent.tasks import all_tasks
from kernelgraph.agent.tasks._common import config_space
from kernelgraph.agent.backends.admission import elf_sections, _SHF_ALLOC_WRITE
rng = random.Random(0)
bad = n = 0
work = Path(tempfile.mkdtemp())
for task in all_tasks("c"):
    space = config_space(task.baseline_config, task.transforms)
    configs = space.configs
    sample = [task.baseline_config] + rng.sample(configs, min(12, len(configs)))
    for config in sample:
        src = work / "k.c"; src.write_text(task.source("c", config))
        for march in ("x86-64-v2", "x86-64-v3"):
            r = subprocess.run(["gcc", "-O2", "-fPIC", "-fopenmp", "-std=gnu11", f"-march={march}", "-c", str(src), "-o", str(work / "k.o")], capture_output=True, text=True)
            if r.returncode: print("compile failed", task.name, r.stderr[:200]); continue
            n += 1
            w = [(nm, sz) for nm, fl, sz, _ in elf_sections((work / "k.o").read_bytes()) if fl & _SHF_ALLOC_WRITE == _SHF_ALLOC_WRITE and sz]
            if w: bad += 1; print(task.name, config, w)
print(f"{n} objects, {bad} with writable sections")
