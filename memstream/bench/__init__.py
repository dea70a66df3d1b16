"""Benchmarks and quality suites: ``memstream bench …``.

Every figure memstream quotes comes from a command here (ingest, query, replay, rescore, erasure,
soak, HTTP, quality). Benchmarks drive the real stack through the operator's entry points
(``ops``) and the doors (``gateway``); nothing in the product imports this package.
"""
