// Explored states by namespace: every neighbour query (exact counters and text scoring, label and
// global retrieval, counting a namespace's states, consolidation) reads the explored states of the
// caller's namespaces, and until now found them through indexes that also held every child measurement
// no attempt started from (three or four per state), each read and then filtered out. A composite
// range index holds only nodes that have all its properties, and `explored` is set (true) only on
// states, so these hold exactly the states: (namespace, explored) for the queries that want all of
// them, and (namespace, explored, signature_complete) for exact counters scoring, which on a large
// namespace wants only its few incomplete states. The (namespace, signature_complete) index of schema
// 0007 is no longer read; it stays for one release, so that a replica still running the previous code
// during a rolling upgrade keeps the index its queries name.
CREATE INDEX measurement_explored IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.explored);
CREATE INDEX measurement_explored_complete IF NOT EXISTS
FOR (n:Measurement) ON (n.namespace, n.explored, n.signature_complete);
