// Suspicious evidence in a namespace, for an operator in Neo4j Browser (docs/exploring.md): attempts
// flagged implausible on write (a time beyond the target's peaks for the declared work; never used as
// evidence), quarantined ones, and unverified ones whose speedup is an outlier (beyond $outlier_speedup
// either way, the evaluator's re-verification threshold). Most suspicious first; per recording key, so
// that one key's run of bad evidence shows as such (`kernelgraph keys quarantine` acts on a key).
// Parameters: $namespace, $outlier_speedup (e.g. 10.0), $limit.
// Returns: recorded_by, attempt_key, reason, transform, target, outcome, speedup, verified, recorded_at.
// :param namespace => 'demo'
// :param outlier_speedup => 10.0
// :param limit => 100
MATCH (a:Attempt {namespace: $namespace})
WITH a, CASE
  WHEN a.implausible THEN 'implausible: ' + coalesce(a.implausible_reason, 'beyond the target peaks')
  WHEN a.quarantined THEN 'quarantined'
  WHEN NOT coalesce(a.verified, false) AND a.speedup IS NOT NULL
       AND (a.speedup > $outlier_speedup OR a.speedup < 1.0 / $outlier_speedup)
    THEN 'unverified outlier: ' + toString(round(a.speedup, 3)) + 'x'
END AS reason
WHERE reason IS NOT NULL
RETURN coalesce(a.recorded_by, 'legacy') AS recorded_by, a.attempt_key AS attempt_key, reason,
       a.transform AS transform, a.target AS target, a.outcome AS outcome, a.speedup AS speedup,
       coalesce(a.verified, false) AS verified, toString(a.created_at) AS recorded_at
ORDER BY CASE WHEN a.implausible THEN 0 WHEN a.quarantined THEN 1 ELSE 2 END, recorded_by, attempt_key
LIMIT $limit
