"""Framework adapters (extras): ``langchain`` (a BaseRetriever) and ``llamaindex`` (a retriever
of NodeWithScore). Each wraps the synchronous ``memstream.client.Memory``."""
