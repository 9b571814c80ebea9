// Store source embeddings (idempotent: the same source always gives the same vector).
// Parameters: $rows: list of {namespace, kernel_id, embedding}. Returns: kernel_id.
// :param {rows: []}
UNWIND $rows AS row
MATCH (k:Kernel {namespace: row.namespace, kernel_id: row.kernel_id})
CALL db.create.setNodeVectorProperty(k, 'source_embedding', row.embedding)
RETURN k.kernel_id AS kernel_id
