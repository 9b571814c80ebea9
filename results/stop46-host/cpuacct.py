"""A process busy ON_S in every ON_S + OFF_S for 2 s: its own CPU time (/proc/PID/schedstat) against
the root cgroup-v1 cpuacct.usage_percpu and /proc/stat's busy time of the machine over the same 2 s.
Usage: cpuacct.py ON_S OFF_S"""
import subprocess, sys, time
def usage(): return [int(x) for x in open("/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu").read().split()]
def stat_busy():
    for line in open("/proc/stat"):
        f = line.split()
        if f[0] == "cpu":
            v = [int(x) for x in f[1:9]]; return (sum(v) - v[3] - v[4]) * 10_000_000
BURST = "import time\nwhile True:\n    end = time.monotonic() + {on}\n    while time.monotonic() < end: pass\n    time.sleep({off})\n"
on, off = float(sys.argv[1]), float(sys.argv[2])
hog = subprocess.Popen([sys.executable, "-c", BURST.format(on=on, off=off)])
try:
    time.sleep(0.5)
    a, sa, t = usage(), stat_busy(), time.monotonic()
    ca = int(open(f"/proc/{hog.pid}/schedstat").read().split()[0])
    time.sleep(2)
    b, sb, w = usage(), stat_busy(), time.monotonic() - t
    cb = int(open(f"/proc/{hog.pid}/schedstat").read().split()[0])
finally:
    hog.kill()
print(f"burst {on*1e3:.0f}/{off*1e3:.0f} ms: the hog ran {(cb-ca)/1e6:.0f} ms in {w:.2f} s; root cpuacct {sum(b)-sum(a):.3g} ns = {(sum(b)-sum(a))/1e6:.0f} ms; /proc/stat busy {(sb-sa)/1e6:.0f} ms")
