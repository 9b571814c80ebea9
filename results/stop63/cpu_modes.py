import sys, statistics
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
main_at=src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")
exec(src[:main_at])
from kernelgraph.agent.backends.c import CBackend
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for rep in range(8):
        row=[]
        for cpu in (0,1):
            row.append(harness_run(built.artifact, base, specs, sizes, cpu, "plain")/1e6)
        print(rep, " ".join(f"cpu{c} {v:.3f}" for c,v in zip((0,1),row)), flush=True)
