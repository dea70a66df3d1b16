"""memstream's wire contracts: the Avro schemas (``*.avsc``) and their codec.

``schemas.codec`` encodes and decodes ``MemoryEvent``, ``MemoryVersioned``, ``DeadLetter``,
``RetrievalRequest`` and ``RetrievalReply`` (fastavro, schemaless binary, optional Confluent
framing) and maps schema names to ids. See README.md in this folder for the evolution rule.
Imports fastavro and the stdlib only; nothing from services, streams or ops.
"""

from memstream.schemas.codec import (
    SCHEMA_NAMES,
    CodecError,
    SchemaIds,
    SchemaRegistry,
    decode,
    decode_framed,
    encode,
    encode_framed,
    frame,
    unframe,
)

__all__ = [
    "SCHEMA_NAMES",
    "CodecError",
    "SchemaIds",
    "SchemaRegistry",
    "decode",
    "decode_framed",
    "encode",
    "encode_framed",
    "frame",
    "unframe",
]
