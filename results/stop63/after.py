import sys, time, subprocess, os
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
HEAVY = "import numpy as np,time,sys\na=np.random.rand(512,512).astype(np.float32)\nend=time.monotonic()+float(sys.argv[1])\nwhile time.monotonic()<end: a@a"
env={**os.environ,"OMP_NUM_THREADS":"1","OPENBLAS_NUM_THREADS":"1"}
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for rep in range(8):
        row=[]
        for case in ("idle", "other-then", "same-then") if rep%2==0 else ("same-then","other-then","idle"):
            time.sleep(2.0)
            if case != "idle":
                subprocess.run(["taskset","-c","1" if case=="other-then" else "0",sys.executable,"-c",HEAVY,"1.0"], env=env)
            row.append((case, harness_run(built.artifact, base, specs, sizes, 0, "plain")/1e6))
        print(rep, " ".join(f"{c}:{v:.2f}" for c,v in row), flush=True)
