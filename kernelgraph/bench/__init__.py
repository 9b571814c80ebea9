"""Benchmarks of the service: ingestion and retrieval at scale, and cross-target transfer on real data."""
