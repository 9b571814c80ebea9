// Measurements whose cache counters came from a separate build of the source: evaluators before 3 ran
// cachegrind on a program they rebuilt from the source (PIE, other predefined macros; an x86-64-v3
// rebuild for v4/native targets), not on the object that was admitted and timed, so a kernel could make
// its counters describe other code (docs/sandbox.md). Their timings are the timed object's; their cache
// counters (and the signature dimensions read from them: l1/llc miss rates, ridge position, issue
// efficiency) may not be. Marked `counters_separate_build: true`: consolidation weighs such a state
// SEPARATE_BUILD_WEIGHT and never merges it with a state counted on the admitted object; retrieval reads
// that weight (docs/retrieval.md). Evaluator 3 counts the admitted object, so nothing new is marked.
// Running this again changes nothing.
MATCH (m:Measurement)
WHERE m.counter_source = 'cpu_cachegrind' AND coalesce(m.evaluator_version, 1) < 3
  AND m.counters_separate_build IS NULL
CALL (m) {
  SET m.counters_separate_build = true
} IN TRANSACTIONS OF 5000 ROWS
