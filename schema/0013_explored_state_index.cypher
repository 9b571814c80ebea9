// Explored states by namespace: every neighbour query (exact counters and text scoring, label and
// global retrieval, counting a namespace's states) reads the explored states of the caller's
// namespaces, and until now found them through an index that also held every child measurement no
// attempt started from (three or four per state), each read and filtered out. A composite range index
// holds only nodes that have all its properties, and `explored` is set (true) only on states, so this
// one holds exactly the states. It replaces (namespace, signature_complete) of schema 0007, whose one
// reader (exact counters scoring) now seeks this one and filters completeness among states.
CREATE INDEX measurement_explored IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.explored);
DROP INDEX measurement_signature_complete IF EXISTS;
