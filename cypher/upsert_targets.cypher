// Create or update hardware targets (peaks are re-measured per host, so they may change).
// Parameters: $namespace, $targets: list of maps {name, props: {kind, arch, peak_gflops, ...}}.
// Returns: name.
// :param {namespace: 'demo', targets: [{name: 'cpu-native', props: {kind: 'cpu', arch: 'native', peak_gflops: 100.0, peak_gbps: 20.0}}]}
UNWIND $targets AS target
MERGE (h:HardwareTarget {namespace: $namespace, name: target.name})
SET h += target.props, h.updated_at = datetime()
RETURN h.name AS name
