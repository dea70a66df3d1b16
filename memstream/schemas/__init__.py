"""memstream's wire contracts: the Avro schemas (``*.avsc``) and their codec.

``schemas.codec`` encodes and decodes ``MemoryEvent``, ``MemoryVersioned``, ``MemoryChanges``,
``DeadLetter``, ``RetrievalRequest``, ``RetrievalReply`` and ``ScoreChanged`` (fastavro,
schemaless binary); ``schemas.changes`` reads a memory.changes message in either form.
See README.md in this folder for the evolution rule.
Imports fastavro and the stdlib only; nothing from services, streams or ops.
"""

from memstream.schemas.codec import SCHEMA_NAMES, CodecError, decode, encode

__all__ = ["SCHEMA_NAMES", "CodecError", "decode", "encode"]
