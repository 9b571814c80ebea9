"""KernelGraph's knowledge service: the experience graph on Neo4j and everything that serves it."""
