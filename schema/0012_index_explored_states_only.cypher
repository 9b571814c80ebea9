// Only explored states (an attempt started from them) are in the per-source vector indexes: neighbour
// search returns nothing else, and the children every attempt measures (most of the graph) made the
// indexes several times larger, slowed every write (each vector is inserted at commit) and crowded the
// candidates a search fetches. From this release a measurement gets its per-source vector
// (signature_<source>) when an attempt first starts from it (cypher/record_attempts.cypher); here the
// vectors of measurements written earlier that no attempt started from are taken out. Their signature
// stays where it is, so an attempt that later starts from one puts it in the index. Idempotent.
MATCH (m:Measurement)
WHERE m.explored IS NULL AND m.counter_source IS NOT NULL AND m['signature_' + m.counter_source] IS NOT NULL
CALL (m) {
  SET m['signature_' + m.counter_source] = null
} IN TRANSACTIONS OF 10000 ROWS;
