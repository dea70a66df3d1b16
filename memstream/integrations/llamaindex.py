"""``MemstreamLlamaRetriever``: memstream as a LlamaIndex retriever (extra ``llamaindex``).

Returns ``NodeWithScore``: a ``TextNode`` whose text is the rendered memory and whose metadata
holds the key, version, valid time, scores and trust; the score is memstream's final score.
Sync and async; it wraps a ``memstream.client.Memory``. ``tenant`` is optional: the
credential fixes it (naming it still works; another tenant is refused by the service).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from memstream.client import Memory, RetrievalReply
from memstream.integrations.common import metadata


class MemstreamLlamaRetriever(BaseRetriever):
    def __init__(
        self,
        memory: Memory,
        tenant: str | None = None,
        *,
        user: str | None = None,
        limit: int = 5,
        force: bool = True,
        **options: Any,
    ) -> None:
        super().__init__()
        self._memory = memory
        self._tenant = tenant
        self._ask = {"user": user, "limit": limit, "force": force, **options}

    @staticmethod
    def _nodes(reply: RetrievalReply) -> list[NodeWithScore]:
        return [
            NodeWithScore(
                node=TextNode(id_=r.version_id, text=r.rendered, metadata=metadata(r)),
                score=r.scores.final,
            )
            for r in reply.results
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        reply = self._memory.retrieve(query_bundle.query_str, self._tenant, **self._ask)
        return self._nodes(reply)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        reply = await self._memory.aretrieve(query_bundle.query_str, self._tenant, **self._ask)
        return self._nodes(reply)
