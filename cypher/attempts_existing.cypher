// Which of these attempt keys are already stored (a replay writes nothing).
// Parameters: $namespace, $attempt_keys (list of strings). Returns: attempt_key.
// :param {namespace: 'demo', attempt_keys: ['browser:1']}
UNWIND $attempt_keys AS key
MATCH (a:Attempt {namespace: $namespace, attempt_key: key})
RETURN a.attempt_key AS attempt_key
