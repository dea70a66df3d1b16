"""``memstream bench quality``: memstream against plain retrieval on the same data and model.

memstream (its real write and read paths, in-process, ``ops.local.LocalMemstream``) is compared
with three baselines over the same events and the same embeddings: plain vector top-k, BM25,
and vector + BM25 fused by reciprocal rank fusion. Three suites: our own trap generator
(``traps``), LoCoMo and SGD slot updates (``datasets``, read from ``../shared/datasets``).

- ``metrics``: pure ranking metrics (recall@k, MRR, wrong-memory rate, current-above-superseded);
- ``baselines``: the three baselines (numpy cosine, our BM25, RRF);
- ``suite``: what a suite is (events + questions); ``traps`` (with ``trap_case``: word pools and
  the per-instance builder) and ``datasets`` (LoCoMo, SGD) build them;
- ``runner``: the stack, one embedding pass, ingest, ask every system;
- ``scoring``: the figures per suite, and memstream's misses with their scores;
- ``report``: Markdown, a PNG chart and the rich headline table; ``bench``: the entry point.

Must not import streams; never copies anything from ../shared into the repository.
"""
