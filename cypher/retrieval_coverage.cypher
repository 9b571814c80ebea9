// Why a retrieval matched little: the explored states of the namespaces, grouped by the dimensions
// each measured (signature_dims), whether it was measured on $target, whether its task is excluded,
// and whether a query with $signature can be compared with it. A state is compared on every
// dimension it measured, so it is comparable only when the query measured all of them, and at least
// $min_shared (3, or fewer when the query measured fewer; docs/retrieval.md).
// Parameters: $namespaces, $target, $signature (one value per dimension, null where not measured:
//   the `signature` of a retrieve answer), $min_shared, $exclude_tasks, $limit (states read at most).
// Returns: dims (indexes of the dimensions those states measured, in the order of
//   docs/counter-signature.md), lacks (those of them the query did not measure), on_target, excluded,
//   comparable, states; the largest groups first.
// :param namespaces => ['tour']
// :param target => 'h100-sm90'
// :param signature => [null, 0.85, null, 0.7, 0.4, 0.7, 0.4, null, null, 0.29, null]
// :param min_shared => 3
// :param exclude_tasks => []
// :param limit => 100000
MATCH (m:Measurement)
USING INDEX m:Measurement(namespace, explored)
WHERE m.namespace IN $namespaces AND m.explored = true AND m.merged_into IS NULL
WITH m LIMIT $limit
WITH m, [i IN range(0, size($signature) - 1) WHERE $signature[i] IS NOT NULL] AS measured
WITH m.signature_dims AS dims, measured, m.target = $target AS on_target,
     m.task IN $exclude_tasks AS excluded, count(*) AS states
RETURN dims, [i IN dims WHERE NOT i IN measured] AS lacks, on_target, excluded,
       size(dims) >= $min_shared AND all(i IN dims WHERE i IN measured) AS comparable, states
ORDER BY states DESC, on_target DESC
