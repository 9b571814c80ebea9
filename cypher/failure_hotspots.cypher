// Where the agent failed most: attempts per task, target and transform that failed (compile_error,
// rejected, incorrect, crashed, timeout, implausible), split by outcome. `discarded` (correct, but not
// faster) is no failure: it is counted beside the failures, never among them.
// Parameters: $namespaces, $target (or null for all), $limit.
// Returns: task, target, transform, attempts, failures, failure_rate, compile_errors, rejected,
//   incorrect, crashed, timeouts, implausible, discarded; most failures first.
// :param namespaces => ['demo']
// :param target => null
// :param limit => 25
MATCH (a:Attempt)
WHERE a.namespace IN $namespaces AND ($target IS NULL OR a.target = $target)
WITH a.task AS task, a.target AS target, a.transform AS transform,
     count(a) AS attempts,
     sum(CASE WHEN a.outcome IN ['kept', 'discarded'] THEN 0 ELSE 1 END) AS failures,
     sum(CASE WHEN a.outcome = 'compile_error' THEN 1 ELSE 0 END) AS compile_errors,
     sum(CASE WHEN a.outcome = 'rejected' THEN 1 ELSE 0 END) AS rejected,
     sum(CASE WHEN a.outcome = 'incorrect' THEN 1 ELSE 0 END) AS incorrect,
     sum(CASE WHEN a.outcome = 'crashed' THEN 1 ELSE 0 END) AS crashed,
     sum(CASE WHEN a.outcome = 'timeout' THEN 1 ELSE 0 END) AS timeouts,
     sum(CASE WHEN a.outcome = 'implausible' THEN 1 ELSE 0 END) AS implausible,
     sum(CASE WHEN a.outcome = 'discarded' THEN 1 ELSE 0 END) AS discarded
WHERE failures > 0
RETURN task, target, transform, attempts, failures, toFloat(failures) / attempts AS failure_rate,
       compile_errors, rejected, incorrect, crashed, timeouts, implausible, discarded
ORDER BY failures DESC, failure_rate DESC, task, target, transform
LIMIT $limit
