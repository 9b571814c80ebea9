import sys, time
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
import subprocess as sp
real_run = sp.run
def run_norandom(argv, **kw):
    return real_run(["setarch", "x86_64", "-R", *argv], **kw)
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for rep in range(10):
        row=[]
        for fixed in (False, True) if rep % 2 == 0 else (True, False):
            subprocess.run = run_norandom if fixed else real_run
            row.append((fixed, harness_run(built.artifact, base, specs, sizes, 0, "plain")/1e6))
        subprocess.run = real_run
        print(rep, " ".join(f"{'fixed' if f else 'random'}:{v:.2f}" for f,v in row), flush=True)
