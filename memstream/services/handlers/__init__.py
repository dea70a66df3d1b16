"""Handlers: the use cases (ingest, index, retrieve, rescore). They take their dependencies
explicitly (ports), never construct adapters, and import no driver."""
