// Which of these attempt keys are already stored (a replay writes nothing), with the hash of the content
// stored under each (null for attempts stored before schema 0015): other content is a conflict.
// Parameters: $namespace, $attempt_keys (list of strings). Returns: attempt_key, content_hash.
// :param {namespace: 'demo', attempt_keys: ['browser:1']}
UNWIND $attempt_keys AS key
MATCH (a:Attempt {namespace: $namespace, attempt_key: key})
RETURN a.attempt_key AS attempt_key, a.content_hash AS content_hash
