// Signature version 4 (docs/counter-signature.md, "The standardisation rule"): each kept CPU dimension is
// divided by its spread between the development set's states (layernorm and rmsnorm), frozen in
// core/signature.py (CPU_DIMENSION_SCALES); the NVIDIA sources keep scale 1. The stored signature stays
// raw; the per-source vectors the vector indexes hold are the scaled values, so every one of them changes,
// and the CPU dimension sets are those the drop rule kept on the two tasks. The six per-source indexes are
// dropped and recreated with their dimension counts. After these statements, service/migrate.py re-signs
// every stored measurement from its kept raw counters (counters_json), keeping the version-3 vector as
// `signature_v3`, and writes the new (scaled) per-source vectors the indexes hold.
// The $dim_<source> parameters come from core/signature.py (SOURCE_DIMENSIONS).
// In Browser: :param {dim_cpu_cachegrind: 8, dim_cpu_timing: 4, dim_nvidia_ncu: 10, dim_nvidia_timing: 7, dim_nvidia_static: 3, dim_kernelbench_timing: 1, signature_similarity: 'euclidean'}
DROP INDEX measurement_signature_cpu_cachegrind IF EXISTS;
DROP INDEX measurement_signature_cpu_timing IF EXISTS;
DROP INDEX measurement_signature_nvidia_ncu IF EXISTS;
DROP INDEX measurement_signature_nvidia_timing IF EXISTS;
DROP INDEX measurement_signature_nvidia_static IF EXISTS;
DROP INDEX measurement_signature_kernelbench_timing IF EXISTS;
CREATE VECTOR INDEX measurement_signature_cpu_cachegrind IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_cpu_cachegrind)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_cpu_cachegrind, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX measurement_signature_cpu_timing IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_cpu_timing)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_cpu_timing, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX measurement_signature_nvidia_ncu IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_nvidia_ncu)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_nvidia_ncu, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX measurement_signature_nvidia_timing IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_nvidia_timing)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_nvidia_timing, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX measurement_signature_nvidia_static IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_nvidia_static)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_nvidia_static, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX measurement_signature_kernelbench_timing IF NOT EXISTS
FOR (n:Measurement) ON (n.signature_kernelbench_timing)
OPTIONS {indexConfig: {`vector.dimensions`: $dim_kernelbench_timing, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
