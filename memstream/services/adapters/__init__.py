"""Adapters: the concrete implementations of ``memstream.services.ports`` (one driver each).

Adapters import the ports, the domain and their driver; never ``services.handlers`` nor ``streams``.
"""
