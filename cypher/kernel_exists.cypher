// Does this kernel exist in one of these namespaces?
// Parameters: $namespaces (list), $kernel_id. Returns: kernel_id, or no row.
// :param {namespaces: ['demo'], kernel_id: 'k0'}
MATCH (k:Kernel {kernel_id: $kernel_id})
WHERE k.namespace IN $namespaces
RETURN k.kernel_id AS kernel_id
LIMIT 1
