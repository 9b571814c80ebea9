import sys, subprocess, time
sys.argv=["x","1","matmul:best-A"]
src=open("results/stop63/handover_probe.py").read()
exec(src[:src.index("with tempfile.TemporaryDirectory() as tmp:\n    backends")])
with tempfile.TemporaryDirectory() as tmp:
    be=CBackend(cache_dir=Path(tmp)/"cache", counters=False)
    task=get_task("matmul"); source=task.source("c", checked_configs(task)["best-A"])
    built=be.compile(task, source, target)
    base=make_input_sets(task,(TIMING_SEED,),small=False)[0]
    specs,sizes=output_specs(task,base),list(task.sizes(base).values())
    for rep in range(6):
        row=[]
        for busy in (False, True):
            spinner = subprocess.Popen(["taskset","-c","1",sys.executable,"-c","import numpy as np\na=np.random.rand(512,512).astype(np.float32)\nwhile True: a@a"], env={**os.environ,"OMP_NUM_THREADS":"1","OPENBLAS_NUM_THREADS":"1"}) if busy else None
            time.sleep(0.5 if busy else 0)
            try:
                row.append(harness_run(built.artifact, base, specs, sizes, 0, "plain")/1e6)
            finally:
                if spinner: spinner.kill(); spinner.wait()
        print(rep, f"idle {row[0]:.3f} sibling-busy {row[1]:.3f}", flush=True)
