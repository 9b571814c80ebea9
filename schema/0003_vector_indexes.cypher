// The two vector indexes. $signature_dim and $signature_similarity come from service/signature.py
// (the one place that defines the signature); $embedding_dim from service/embeddings.py.
// In Browser: :param {signature_dim: 12, signature_similarity: 'euclidean', embedding_dim: 384}
CREATE VECTOR INDEX measurement_signature IF NOT EXISTS
FOR (n:Measurement) ON (n.signature)
OPTIONS {indexConfig: {`vector.dimensions`: $signature_dim, `vector.similarity_function`: $signature_similarity,
                          `vector.quantization.enabled`: false}};
CREATE VECTOR INDEX kernel_source_embedding IF NOT EXISTS
FOR (n:Kernel) ON (n.source_embedding)
OPTIONS {indexConfig: {`vector.dimensions`: $embedding_dim, `vector.similarity_function`: 'cosine'}};
