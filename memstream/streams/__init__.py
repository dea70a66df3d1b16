"""Streams: the Faust app factory, the topics, and thin agents (decode → one handler → publish).

No module-level ``app``: ``memstream.streams.app.create_app`` builds one per worker process.
"""
