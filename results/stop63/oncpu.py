import re, sys, statistics
pat = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\].*?\s([\d.]+): (\w+): (.*)$")
for path in sys.argv[1:]:
    calls=[]; cur=None
    for line in open(path):
        m = pat.match(line)
        if not m: continue
        comm, pid, cpu, ts, ev, rest = m.groups(); ts=float(ts); cpu=int(cpu)
        if ev == "tracing_mark_write":
            if "CALL-START" in rest: cur={"cpu":cpu,"on":0.0,"since":None}
            elif "CALL-END" in rest and cur: calls.append(cur["on"]); cur=None
        elif ev == "sched_switch" and cur is not None and cpu == cur["cpu"]:
            if "next_comm=serve-loop" in rest: cur["since"]=ts
            elif "prev_comm=serve-loop" in rest and cur["since"] is not None:
                cur["on"] += ts-cur["since"]; cur["since"]=None
    big=[c for c in calls if c>0.001]
    print(path, f"calls {len(calls)}; kernel on-CPU per call median {statistics.median(big)*1e3:.3f} ms (of {len(big)} over 1 ms)")
