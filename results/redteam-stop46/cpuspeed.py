import os, time
def spin(n=3_000_000):
    x = 0
    for i in range(n): x += i
    return x
for rnd in range(3):
    for cpu in (0, 1):
        os.sched_setaffinity(0, {cpu}); spin(100000)
        t = time.perf_counter(); spin(); t = time.perf_counter() - t
        print(rnd, cpu, f"{t*1e3:.1f} ms")
