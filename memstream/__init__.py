"""memstream: versioned, trust-scored memory for AI agents, fed by business events over Kafka.

One import name for the whole library. ``memstream.client`` is what an agent needs (a plain
``pip install memstream``: no torch, no Faust); the worker, the embedded stack and the offline
tools are ``memstream.services``, ``memstream.streams`` and ``memstream.ops`` (the ``server``
extra).
"""

__version__ = "0.1.0"
