// Targets carry their measured similarity (service/target_similarity.py, docs/retrieval.md): one
// (:HardwareTarget)-[:TRANSFERS_LIKE {rank_correlation, pairs, measured_at}]->(:HardwareTarget) per
// pair of a namespace's targets, written by `kernelgraph consolidate`. Graphs written before have none:
// retrieval weighs their cross-target evidence by the prior until the next consolidation measures it.
// This index answers "when was each similarity last measured" without a scan.
CREATE INDEX target_similarity_measured_at IF NOT EXISTS FOR ()-[s:TRANSFERS_LIKE]-() ON (s.measured_at);
