"""``MemstreamRetriever``: memstream as a LangChain ``BaseRetriever`` (extra ``langchain``).

Each ``Document``'s ``page_content`` is the rendered memory (the XML block an LLM reads) and its
``metadata`` the key, version, valid time, scores and trust. Sync and async; it wraps a
``memstream.client.Memory`` (which owns the Kafka connection and its loop).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from memstream.client import Memory, RetrievalReply
from memstream.integrations.common import metadata


class MemstreamRetriever(BaseRetriever):
    """``MemstreamRetriever(memory=Memory(broker, credential=KEY), user="C-17")``.

    ``tenant`` is optional: the credential fixes it. Naming it (as before) still works, and a
    tenant other than the credential's is refused by the service."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    tenant: str | None = None
    user: str | None = None
    limit: int = 5
    force: bool = True
    options: dict[str, Any] = Field(default_factory=dict)

    def _documents(self, reply: RetrievalReply) -> list[Document]:
        return [
            Document(page_content=r.rendered, metadata=metadata(r), id=r.version_id)
            for r in reply.results
        ]

    def _ask(self) -> dict[str, Any]:
        return {"user": self.user, "limit": self.limit, "force": self.force, **self.options}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._documents(self.memory.retrieve(query, self.tenant, **self._ask()))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        reply = await self.memory.aretrieve(query, self.tenant, **self._ask())
        return self._documents(reply)
