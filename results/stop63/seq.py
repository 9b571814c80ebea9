import sys, time
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    t0=time.monotonic(); out=[]
    for rep in range(40):
        v=harness_run(built.artifact, base, specs, sizes, 0, "plain")/1e6
        out.append(f"{time.monotonic()-t0:.1f}s:{v:.2f}")
    print(" ".join(out))
