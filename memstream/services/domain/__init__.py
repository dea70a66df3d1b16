"""The pure core of memstream.

Stdlib only, synchronous, frozen dataclasses; ``now`` is always a parameter.
Must not import any I/O library, nor anything outside ``memstream.services.domain``.
"""
