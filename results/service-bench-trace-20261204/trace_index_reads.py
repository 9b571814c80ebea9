"""Diagnostic: how many index reads and which fetch_k each timed retrieval of bench service needs."""
import collections, json, sys, time
import kernelgraph.service.retrieval as r
from kernelgraph.bench import service as b
from kernelgraph.core import settings as settings_module

log = []
orig = r.search_index
def traced(reader, query, k, overfetch, **params):
    reads = []
    class Proxy:
        def read(self, q, **p):
            t0 = time.perf_counter()
            rows = reader.read(q, **p)
            reads.append((p["fetch_k"], round((time.perf_counter() - t0) * 1e3, 2), len(rows),
                          rows[0]["frontier"] if rows else None, rows[-1]["score"] if rows else None))
            return rows
    out = orig(Proxy(), query, k, overfetch, **params)
    log.append({"query": query, "k": k, "start": overfetch, "reads": reads, "learnt": out[1]})
    return out
r.search_index = traced
opts = b.BenchOptions(measurements=int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
res = b.run_service_bench(settings_module.get_settings(), opts)
print(json.dumps({k: res[k] for k in ("retrieve_p50_ms", "retrieve_p95_ms", "retrieve_fetch_k", "recall_at_10")}))
timed = [e for e in log if e["k"] == b.RETRIEVE_K]
print("searches with k=20:", len(timed))
print("reads per search:", collections.Counter(len(e["reads"]) for e in timed))
print("fetch sequences:", collections.Counter(tuple(x[0] for x in e["reads"]) for e in timed).most_common(8))
print("learnt:", collections.Counter(e["learnt"] for e in timed))
ms = [x[1] for e in timed for x in e["reads"]]
print("read ms by fetch:", {f: round(sum(x[1] for e in timed for x in e["reads"] if x[0]==f)/max(1,sum(1 for e in timed for x in e["reads"] if x[0]==f)),2) for f in sorted({x[0] for e in timed for x in e["reads"]})})
json.dump(log, open("searches.json", "w"))
