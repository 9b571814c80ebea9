import sys
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for files in range(6):
        with scratch_dir("kg-same-") as d:
            row=[harness_run(built.artifact, base, specs, sizes, draw.choice(allowed), "plain", d)/1e6 for _ in range(6)]
        print(f"files {files}: " + " ".join(f"{v:.3f}" for v in row), flush=True)
