"""Operations: the operator's entry points — the embedded stack, ``up``, migrations, topics,
publish/ask/history, replay, forget, identity and the dead-letter tools.

The command line that dispatches to them is ``memstream.cli``; the doors are ``memstream.gateway``
and the benchmarks ``memstream.bench``.
"""
