"""The doors: an HTTP gateway (FastAPI), an MCP server and an audit timeline page.

Every door is a client of the request/reply path (the Kafka topics stay the one way into the
worker), except read-only views of Postgres for history and audit. ``service.Doors`` is what
they share; ``app`` is the HTTP gateway, ``mcp`` the MCP tools, ``ui`` the timeline page.
"""
