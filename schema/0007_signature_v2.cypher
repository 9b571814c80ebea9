// Signature version 2 (docs/counter-signature.md): unmeasured dimensions are masked, never imputed.
// The one vector index over every Measurement.signature (version 1, 12 imputed dimensions) goes; each
// counter source gets its own index over its complete measurements' values on the dimensions it
// measures (Measurement.signature_<source>), so a masked search stays indexed (docs/retrieval.md).
// After these statements, service/migrate.py re-signs every stored measurement from its kept raw
// counters (counters_json) with client/signature.py, keeping the old vector as `signature_v1`.
// The $dim_<source> parameters come from client/signature.py (SOURCE_DIMENSIONS).
// In Browser: :param {dim_cpu_cachegrind: 9, dim_cpu_timing: 5, dim_nvidia_ncu: 10, dim_nvidia_timing: 7, dim_nvidia_static: 3, dim_kernelbench_timing: 1, signature_similarity: 'euclidean'}
DROP INDEX measurement_signature IF EXISTS;
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
// Large namespaces score the incomplete states exactly: this finds them without a scan.
CREATE INDEX measurement_signature_complete IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.signature_complete);
// The re-signing step finds the measurements still on an older signature version.
CREATE INDEX measurement_signature_version IF NOT EXISTS FOR (n:Measurement) ON (n.signature_version);
