"""memstream services: the pure domain, ports, handlers, adapters and the composition root."""
