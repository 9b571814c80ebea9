"""Record this release's graph and the answers it gives, for the upgrade test of every later release.

    python scripts/upgrade_fixture.py tests/fixtures/graphs/<release>

Starts a throw-away local Neo4j, writes a graph with this checkout's code (the docs' tour data plus a
real, short optimize run on the host CPU, run twice so that
consolidation, which it then runs, has a re-measured state to merge), records the questions of tests/upgrade/questions.py with
their answers (answers.json), and dumps the database with neo4j-admin (graph.dump). Run it once per
release that changes stored data, from that release's commit, and commit the folder.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO)]

from kernelgraph.agent.loop import optimize  # noqa: E402
from kernelgraph.agent.proposers.experience import ExperienceProposer  # noqa: E402
from kernelgraph.agent.targets import get_target  # noqa: E402
from kernelgraph.agent.tasks import get_task  # noqa: E402
from kernelgraph.bench.demo_graph import seed as seed_tour  # noqa: E402
from kernelgraph.cli.agent import make_backend  # noqa: E402
from kernelgraph.core.settings import Settings  # noqa: E402
from kernelgraph.core.signature import SIGNATURE_VERSION  # noqa: E402
from kernelgraph.service import migrate  # noqa: E402
from kernelgraph.service.consolidation import consolidate  # noqa: E402
from kernelgraph.service.embeddings import MiniLMEmbedder  # noqa: E402
from kernelgraph.service.inprocess import InProcessClient  # noqa: E402
from kernelgraph.service.knowledge import KnowledgeService  # noqa: E402
from kernelgraph.service.neo4j_local import LocalNeo4j  # noqa: E402
from kernelgraph.service.store import GraphStore, open_driver  # noqa: E402
from tests.upgrade.questions import ask  # noqa: E402

RUN_NAMESPACE = "upgrade-run"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def questions(store: GraphStore, tour_kernel: str, run_kernel: str) -> list[dict[str, Any]]:
    """Questions whose inputs are taken from the stored graph, so they hit real neighbours."""
    asked: list[dict[str, Any]] = []
    for namespace, target in (
        ("tour", "h100-sm90"),
        ("tour", "cpu-x86-64-v4"),
        (RUN_NAMESPACE, "cpu-x86-64-v2"),
    ):
        _, rows = store.run_text(
            "MATCH (m:Measurement {namespace: $ns})-[:OF]->(k:Kernel) "
            "WHERE m.signature IS NOT NULL AND size(m.signature_dims) > 0 "
            "RETURN m.signature AS signature, m.signature_dims AS dims, k.source AS source "
            "ORDER BY m.measurement_id LIMIT 2",
            {"ns": namespace},
            write=False,
        )
        for row in rows:
            # Signature 2: null where the state measured nothing (the stored 0.0 there is no value).
            signature = [v if i in row["dims"] else None for i, v in enumerate(row["signature"])]
            asked.append({"call": "retrieve", "namespace": namespace,
                          "request": {"target": target, "mode": "counters", "signature": signature}})  # fmt: skip
            asked.append({"call": "retrieve", "namespace": namespace,
                          "request": {"target": target, "mode": "text", "source": row["source"]}})  # fmt: skip
    asked.append({"call": "lineage", "namespace": "tour", "kernel_id": tour_kernel})
    asked.append({"call": "lineage", "namespace": RUN_NAMESPACE, "kernel_id": run_kernel})
    asked.append({"call": "transfer", "namespace": "tour", "source": "h100-sm90", "destination": "a100-sm80"})
    asked.append(
        {"call": "transfer", "namespace": "tour", "source": "cpu-x86-64-v4", "destination": "cpu-x86-64-v2"}
    )
    return asked


def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    release = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    )
    with tempfile.TemporaryDirectory(prefix="kernelgraph-fixture-") as home:
        settings = Settings(data_home=Path(home), bolt_port=_free_port(), http_port=_free_port(),
                            namespace=RUN_NAMESPACE, neo4j_heap="1g", neo4j_pagecache="256m")  # fmt: skip
        server = LocalNeo4j(settings)
        server.start()
        try:
            driver = open_driver(settings)
            store = GraphStore(driver, settings.neo4j_database)
            migrate.apply(store)
            knowledge = KnowledgeService(store, MiniLMEmbedder())
            tour = seed_tour(knowledge)
            client = InProcessClient(knowledge, RUN_NAMESPACE)
            result = optimize(get_task("softmax"), make_backend("c"), get_target("cpu-x86-64-v2"),
                              ExperienceProposer(client, seed=1), client, budget=4, seed=1)  # fmt: skip
            # A second run re-measures the same baseline, so consolidation has a state to merge: the
            # fixture holds a consolidated graph (since release v3) for later releases to upgrade.
            optimize(get_task("softmax"), make_backend("c"), get_target("cpu-x86-64-v2"),
                     ExperienceProposer(client, seed=2), client, budget=4, seed=2)  # fmt: skip
            for namespace in ("tour", RUN_NAMESPACE):
                print(consolidate(store, namespace).model_dump_json())
            knowledge.embed_pending(["tour", RUN_NAMESPACE])
            _, kernels = store.run_text(
                "MATCH (a:Attempt {namespace: $ns})-[:PRODUCED]->(k:Kernel) "
                "RETURN k.kernel_id AS id ORDER BY a.outcome = 'kept' DESC, a.attempt_key DESC LIMIT 1",
                {"ns": RUN_NAMESPACE},
                write=False,
            )
            run_kernel = kernels[0]["id"]
            asked = questions(store, tour.lineage_kernel_id, run_kernel)
            # The signature version each question was keyed on (tests/upgrade/questions.py older_signature).
            recorded = [
                {**q, "signature_version": SIGNATURE_VERSION, "answer": ask(knowledge, q)} for q in asked
            ]
            driver.close()
        finally:
            server.stop()
        server.dump(out_dir / "graph.dump")
    (out_dir / "answers.json").write_text(
        json.dumps(
            {"release": release.stdout.strip(), "optimize_speedup": result.speedup, "questions": recorded},
            indent=1,
        )
        + "\n"
    )
    print(
        f"wrote {out_dir / 'graph.dump'} and {len(recorded)} answered questions to {out_dir / 'answers.json'}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
