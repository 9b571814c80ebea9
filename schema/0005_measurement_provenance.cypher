// Measurements record which evaluator measured them (`evaluator_version`, agent.evaluator.EVALUATOR_VERSION)
// and whether its sandbox was on (`sandboxed`). Both are absent on measurements recorded before
// evaluator 2; consolidation separates old from new by this index (absent = evaluator 1, unsandboxed).
// Attempts gained two outcome values, 'rejected' and 'implausible': strings, no schema change.
CREATE INDEX measurement_evaluator IF NOT EXISTS FOR (n:Measurement) ON (n.namespace, n.evaluator_version);
