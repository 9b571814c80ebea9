// Signature version 3 (docs/counter-signature.md): the dimensions the drop rule kept, judged by
// `kernelgraph bench signature` on the development set (each dimension's test-retest noise against its
// spread, and redundancy). The signature keeps its 11 slots (the API's lists keep their shape); the
// dimensions a source no longer measures are left unmeasured, so each per-source vector index changes
// its dimension count: it is dropped and recreated with the new one. After these statements,
// service/migrate.py re-signs every stored measurement from its kept raw counters (counters_json),
// keeping the version-2 vector as `signature_v2`, and writes the new per-source vectors the indexes hold.
// The $dim_<source> parameters come from core/signature.py (SOURCE_DIMENSIONS).
// In Browser: :param {dim_cpu_cachegrind: 6, dim_cpu_timing: 3, dim_nvidia_ncu: 10, dim_nvidia_timing: 7, dim_nvidia_static: 3, dim_kernelbench_timing: 1, signature_similarity: 'euclidean'}
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
