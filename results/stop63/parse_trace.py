import re, sys, collections
lines = open(sys.argv[1]).read().splitlines()
pat = re.compile(r"^\s*(.+?)-(\d+)\s+\[(\d+)\].*?\s([\d.]+): (\w+): (.*)$")
calls = []; cur = None
for line in lines:
    m = pat.match(line)
    if not m: continue
    comm, pid, cpu, ts, ev, rest = m.groups(); ts = float(ts); cpu = int(cpu)
    if ev == "tracing_mark_write":
        if "CALL-START" in rest: cur = {"start": ts, "cpu": cpu, "sw": []}
        elif "CALL-END" in rest and cur: cur["end"] = ts; calls.append(cur); cur = None
    elif ev == "sched_switch" and cur is not None:
        cur["sw"].append((ts, cpu, rest))
preempt = 0; on_cpu_python = []
for c in calls:
    n = 0
    for ts, cpu, rest in c["sw"]:
        if cpu == c["cpu"] and "prev_comm=serve-loop" in rest and "prev_state=R" in rest:
            n += 1
    preempt += n
print(f"{len(calls)} calls; kernel preempted on its CPU while runnable: {preempt} times; calls with one: {sum(1 for c in calls if any(cpu==c['cpu'] and 'prev_comm=serve-loop' in r and 'prev_state=R' in r for _,cpu,r in c['sw']))}")
nexts = collections.Counter()
for c in calls:
    for ts, cpu, rest in c["sw"]:
        if cpu == c["cpu"] and "prev_comm=serve-loop" in rest and "prev_state=R" in rest:
            nexts[rest.split("next_comm=")[1].split()[0]] += 1
print(nexts)
# busy time of the other CPU inside call windows: from switch-to-nonidle to switch-to-idle
busy_total = 0; wall_total = 0; by_task = collections.Counter()
state = {}  # cpu -> (task, since)
allsw = []
for line in lines:
    m = pat.match(line)
    if m and m.group(5) == "sched_switch":
        allsw.append((float(m.group(4)), int(m.group(3)), m.group(6)))
for c in calls:
    other = 1 - c["cpu"]
    # who runs on other at c.start: last switch before start
    prev = [s for s in allsw if s[1] == other and s[0] <= c["start"]]
    task = prev[-1][2].split("next_comm=")[1].split()[0] if prev else "swapper"
    t = c["start"]
    for ts, cpu, rest in [s for s in allsw if s[1] == other and c["start"] < s[0] <= c["end"]]:
        if not task.startswith("swapper"): busy_total += ts - t; by_task[task] += ts - t
        task = rest.split("next_comm=")[1].split()[0]; t = ts
    if not task.startswith("swapper"): busy_total += c["end"] - t; by_task[task] += c["end"] - t
    wall_total += c["end"] - c["start"]
print(f"other CPU busy {busy_total*1e3:.2f} ms of {wall_total*1e3:.1f} ms of calls", {k: round(v*1e6) for k, v in by_task.most_common(8)})
