import sys, time, subprocess
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
SPIN = "import time,sys\nend=time.monotonic()+float(sys.argv[1])\nwhile time.monotonic()<end: pass"
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for rep in range(8):
        row=[]
        for spin in (0.0, 1.5, 0.0, 1.5) if rep % 2 == 0 else (1.5, 0.0, 1.5, 0.0):
            time.sleep(2.0)
            if spin:
                subprocess.run(["taskset","-c","0","python3","-c",SPIN,str(spin)])
            row.append((spin, harness_run(built.artifact, base, specs, sizes, 0, "plain")/1e6))
        print(rep, " ".join(f"spin{s:.1f}:{v:.2f}" for s,v in row), flush=True)
