"""The public client: what an agent imports to ask memstream (no torch, no Faust needed).

``MemoryClient`` lives in ``memstream.streams.client`` beside the transport it shares with the
worker; this module is its stable import path.
"""

from memstream.streams.client import MemoryClient, MemoryClientError, RetrievalTimeout

__all__ = ["MemoryClient", "MemoryClientError", "RetrievalTimeout"]
