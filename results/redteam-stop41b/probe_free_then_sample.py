import mmap, time, sys
def pr():
    with open('/proc/stat','rb') as f:
        for l in f:
            if l.startswith(b'procs_running'): return int(l.split()[1])
def sample(sec):
    n=busy=0; t=time.time(); hist=[]
    while time.time()-t<sec:
        v=pr(); n+=1; busy+= v>=2; hist.append((round(time.time()-t,3),v)) if v>=2 else None
        time.sleep(0.001)
    return n,busy,hist
print('idle', sample(3)[:2])
m=mmap.mmap(-1, int(sys.argv[1])<<20)
for i in range(0,len(m),4096): m[i]=1
t0=time.time(); m.close(); print('munmap took',round(time.time()-t0,3))
n,b,h=sample(4); print('after free',n,b); 
import collections; print(collections.Counter(int(x*4)/4 for x,_ in h))
