"""One agent process of `kernelgraph bench load`: what the optimize loop sends, over HTTP, until a deadline.

Run as `python -m kernelgraph.bench.load_agent CONFIG.json`; it writes its results to the
config's `out` path. It imports the standard library only, so that 64 of them start in seconds and
spend the shared cores on requests, not on imports or model validation (the service sees exactly
the JSON an agent's KernelGraphClient would send).

What an agent does is agent/loop.py's `optimize`, without compiling or timing kernels:

- `loop` phase: each run calls POST /v1/targets once (`client.upsert_targets`), then for each of
  `budget` steps POST /v1/retrieve (the experience proposer, with raw cachegrind counters, k=20,
  limit=20) and POST /v1/attempts (`client.record_attempt`): the first attempt of a run carries its
  parent and the parent's measurement in full, later ones name the parent by `parent_measurement_id`,
  and a kept child becomes the next parent. Retrieve:record is 1:1, as in the loop.
- `write` phase: the same attempts, back to back, without retrievals or target upserts.

Like KernelGraphClient, an agent retries 429 and 503 after `Retry-After` (and connection failures
after a backoff) with the same attempt key, a bounded number of times.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

MAX_RETRIES = 6
TRANSFORMS = ("unroll", "vectorize", "tile", "interchange", "parallelize", "fuse", "prefetch",
              "register-blocking", "split-k", "strength-reduce", "hoist", "peel")  # fmt: skip
PATTERNS = ("dense-matmul", "row-reduction", "row-softmax", "stencil", "scan", "gather", "contiguous-stream")
FAILURE_RATE = 0.1


class Agent:
    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.rng = random.Random(config["seed"])
        self.host, self.port = config["host"], int(config["port"])
        self.headers = {"Authorization": f"Bearer {config['key']}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        self.latency_ms: dict[str, list[float]] = {}
        self.statuses: dict[str, dict[str, int]] = {}
        self.acknowledged: list[str] = []
        self.created = 0
        self.transport_errors = 0
        self.transport_failures: list[dict[str, Any]] = []
        self.retries = 0
        self.gave_up = 0
        self.retrieves_ok = 0
        self.neighbours = 0
        self.first_at: float | None = None
        self.last_at = 0.0

    # ---- transport ------------------------------------------------------------------------------
    def call(self, route: str, method: str, path: str, body: Any) -> tuple[int, Any] | None:
        payload = json.dumps(body).encode() if body is not None else None
        for attempt in range(MAX_RETRIES + 1):
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=payload, headers=self.headers)
                response = self.conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self.transport_errors += 1
                # What failed and after how long: a timeout and a refused connection mean different things.
                self.transport_failures.append({"route": route, "error": type(exc).__name__, "detail": str(exc)[:200],
                                                "after_ms": round((time.perf_counter() - started) * 1e3, 1),
                                                "at": time.time()})  # fmt: skip
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                if attempt < MAX_RETRIES:
                    self.retries += 1
                    time.sleep(min(0.25 * 2**attempt, 5.0))
                continue
            self.latency_ms.setdefault(route, []).append((time.perf_counter() - started) * 1e3)
            per_route = self.statuses.setdefault(route, {})
            per_route[str(response.status)] = per_route.get(str(response.status), 0) + 1
            if response.status in (429, 503) and attempt < MAX_RETRIES:
                self.retries += 1
                after = response.getheader("Retry-After") or "1"
                time.sleep(min(float(after) if after.isdigit() else 1.0, 10.0))
                continue
            try:
                return response.status, json.loads(data) if data else None
            except ValueError:
                return response.status, None
        self.gave_up += 1
        return None

    # ---- what the loop sends --------------------------------------------------------------------
    def counters(self) -> dict[str, float]:
        """Every counter the C backend reports with cachegrind (agent/backends/c.py), so the signature
        is complete, as the loop's are: its state goes to the vector index, not to exact scoring."""
        rng = self.rng
        time_ns = math.exp(rng.uniform(math.log(1e5), math.log(5e7)))
        flops = time_ns * rng.uniform(0.05, 20.0)
        threads = float(rng.choice((1, 2)))
        return {"time_ns": time_ns, "flops": flops, "bytes": flops / rng.uniform(0.1, 30.0),
                "instructions": flops * rng.uniform(1.0, 4.0), "d1_miss_rate": rng.uniform(0.0, 0.5),
                "ll_miss_rate": rng.uniform(0.0, 0.2), "ll_miss_bytes": flops / rng.uniform(0.5, 200.0),
                "threads": threads, "cpu_utilization": threads / 2 * rng.uniform(0.8, 1.0)}  # fmt: skip

    def measurement(self, counters: dict[str, float]) -> dict[str, Any]:
        median = counters["time_ns"]
        return {"median_ns": median, "iqr_ns": median * 0.02, "trials": 21, "correct": True,
                "counter_source": "cpu_cachegrind", "counters": counters}  # fmt: skip

    def source(self, task: str, label: str) -> str:
        # About the size of a rendered C kernel (1-2 KiB): what an agent uploads with each attempt.
        body = "".join(f"    acc{i} += x[i + {i}] * w[{i}]; // {label}\n" for i in range(24))
        return (f"// {task}: {label}\nvoid kernel(const float* restrict x, const float* restrict w, "
                f"float* restrict y, int n) {{\n  for (int i = 0; i < n; ++i) {{\n{body}  }}\n}}\n")  # fmt: skip

    def run(self, deadline: float) -> None:
        config = self.config
        task, pattern, target = config["task"], self.rng.choice(PATTERNS), config["target"]
        run_id = f"{config['run_prefix']}-r{self.rng.getrandbits(40):010x}"
        loop = config["phase"] == "loop"
        if loop:
            self.timed(
                lambda: self.call(
                    "POST /v1/targets", "POST", "/v1/targets", {"targets": [config["target_body"]]}
                )
            )
        parent_source = self.source(task, f"{run_id} baseline")
        parent_counters = self.counters()
        parent: dict[str, Any] | None = {
            "task": task,
            "backend": "c",
            "source": parent_source,
            "patterns": [pattern],
        }
        parent_measurement: dict[str, Any] | None = self.measurement(parent_counters)
        parent_id: str | None = None
        for step in range(int(config["budget"])):
            if time.time() >= deadline:
                return
            if loop:
                retrieve = {"target": target, "mode": "counters", "k": 20, "limit": 20,
                            "counters": parent_counters, "counter_source": "cpu_cachegrind"}  # fmt: skip
                answer = self.timed(
                    lambda body=retrieve: self.call("POST /v1/retrieve", "POST", "/v1/retrieve", body)
                )
                if answer is not None and answer[0] == 200 and isinstance(answer[1], dict):
                    self.retrieves_ok += 1
                    self.neighbours += int(answer[1].get("neighbours", 0))
            transform = self.rng.choice(TRANSFORMS)
            child_counters = self.counters()
            record: dict[str, Any] = {
                "attempt_key": f"{run_id}:{step}", "run_id": run_id, "agent": config["agent"], "target": target,
                "transform": {"name": transform, "params": {"factor": self.rng.choice((2, 4, 8))}},
                "child": {"task": task, "backend": "c", "source": self.source(task, f"{run_id} step {step}"),
                          "patterns": [pattern]},
            }  # fmt: skip
            if parent_id is not None:
                record["parent_measurement_id"] = parent_id
            else:
                record["parent"], record["parent_measurement"] = parent, parent_measurement
            if self.rng.random() < FAILURE_RATE:
                record.update(outcome="compile_error", diagnosis="error: expected ';' (synthetic)")
                speedup = None
            else:
                speedup = parent_counters["time_ns"] / child_counters["time_ns"]
                record.update(outcome="kept" if speedup > 1.02 else "discarded", speedup=speedup,
                              child_measurement={**self.measurement(child_counters),
                                                 "parent_median_ns": parent_counters["time_ns"]})  # fmt: skip
            answer = self.timed(
                lambda body=record: self.call("POST /v1/attempts", "POST", "/v1/attempts", body)
            )
            if answer is None or answer[0] not in (200, 201) or not isinstance(answer[1], dict):
                continue  # like the loop: the run goes on; the report counts what did not land
            self.acknowledged.append(record["attempt_key"])
            self.created += answer[0] == 201
            parent_id = answer[1].get("parent_measurement_id") or parent_id
            if record["outcome"] == "kept" and answer[1].get("child_measurement_id"):
                parent_id, parent_counters = answer[1]["child_measurement_id"], child_counters

    def timed(self, call: Any) -> Any:
        result = call()
        now = time.time()
        self.first_at = self.first_at or now
        self.last_at = now
        return result


def main(config_path: str) -> int:
    config = json.loads(Path(config_path).read_text())
    agent = Agent(config)
    Path(config["ready"]).touch()
    go = Path(config["go"])
    while not go.exists():  # every agent starts at the same moment, once all 64 have started up
        time.sleep(0.02)
    time.sleep(max(0.0, float(json.loads(go.read_text())["start_at"]) - time.time()))
    started_cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.time()
    deadline = started + float(config["seconds"])
    while time.time() < deadline:
        agent.run(deadline)
    ended_cpu = resource.getrusage(resource.RUSAGE_SELF)
    result = {
        "agent": config["agent"], "started_at": started, "ended_at": time.time(), "last_response_at": agent.last_at,
        "latency_ms": agent.latency_ms, "statuses": agent.statuses, "acknowledged": agent.acknowledged,
        "created": agent.created, "transport_errors": agent.transport_errors,
        "transport_failures": agent.transport_failures, "retries": agent.retries,
        "gave_up": agent.gave_up, "retrieves_ok": agent.retrieves_ok, "neighbours": agent.neighbours,
        "cpu_s": (ended_cpu.ru_utime - started_cpu.ru_utime) + (ended_cpu.ru_stime - started_cpu.ru_stime),
    }  # fmt: skip
    Path(config["out"]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
