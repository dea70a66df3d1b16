"""The adapters' errors: ``AdapterError`` and the transient kind a consumer retries.

Ports (Protocols and the values they carry); must not import any adapter nor any I/O library.
"""

from __future__ import annotations


class AdapterError(Exception):
    """Root of every error raised by an adapter; drivers' errors are translated into it."""


class TransientError(AdapterError):
    """A failure that may pass (connection lost, timeout): retry with backoff."""
