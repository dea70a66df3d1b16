"""The typed clients and the framework adapters against the real stack: the sync Memory, the
async AsyncMemory, a LangChain runnable chain and a LlamaIndex query engine."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers.no_text import NoText

from memstream.client import AsyncMemory, Memory, RetrievalReply
from memstream.integrations.langchain import MemstreamRetriever
from memstream.integrations.llamaindex import MemstreamLlamaRetriever
from tests.doors.conftest import Doors, memory_event
from tests.e2e.processes import guard


def test_the_sync_client_retrieves_typed_replies_and_remembers(doors: Doors) -> None:
    setup = doors.setup
    with Memory(
        setup.broker, setup.topics, credential=doors.keys["agent"], timeout=guard(30)
    ) as memory:
        reply = memory.retrieve("what did I return?", doors.tenant, user="C-17", force=True)
        assert isinstance(reply, RetrievalReply) and reply.ok
        top = reply.results[0]
        assert top.memory_key == "return:C-17:O-1" and top.version == 1
        assert 0 < top.scores.trust <= 1 and "kettle" in top.rendered
    with Memory(setup.broker, setup.topics, credential=doors.keys["producer"]) as producer:
        event = memory_event(
            doors.tenant,
            "note:C-55:sync",
            "Customer C-55 moved to Lyon.",
            ago=timedelta(hours=1),
            entity="customer:C-55",
        )
        published = producer.remember([event, {"event_id": "broken"}], tenant=doors.tenant)
        assert published.sent == [(doors.tenant, event["event_id"])]
        assert [(r.index, r.reason) for r in published.rejected] == [(1, "missing_field")]
    status = setup.wait([(doors.tenant, event["event_id"])], timeout=120)
    assert not status.pending and not status.dead


def test_the_async_client_and_a_bad_request(doors: Doors) -> None:
    async def go() -> tuple[RetrievalReply, RetrievalReply]:
        setup = doors.setup
        key = doors.keys["agent"]
        async with AsyncMemory(
            setup.broker, setup.topics, credential=key, timeout=guard(30)
        ) as memory:
            good = await memory.retrieve(
                "what does X1 charge over?", doors.tenant, anchors=[("product", "X1")], force=True
            )
            bad = await memory.retrieve("x", doors.tenant, limit=500)
            return good, bad

    good, bad = asyncio.run(go())
    assert good.results[0].memory_key == "spec:X1" and good.results[0].version == 2
    assert bad.status == "error" and bad.error is not None
    assert bad.error.code == "limit_out_of_range"


def test_a_langchain_chain_over_the_retriever(doors: Doors) -> None:
    setup = doors.setup
    with Memory(
        setup.broker, setup.topics, credential=doors.keys["agent"], timeout=guard(30)
    ) as memory:
        # No tenant: the credential fixes it (tenant= is still accepted, and checked).
        retriever = MemstreamRetriever(memory=memory, user="C-17", limit=3)
        named = MemstreamRetriever(memory=memory, tenant=doors.tenant, user="C-17", limit=3)
        assert named.invoke("what did I return last month?")[0].metadata["version"] == 1

        def cite(documents: list[Document]) -> str:
            return "\n".join(
                f"[{d.metadata['memory_key']} v{d.metadata['version']} "
                f"trust {d.metadata['trust']:.2f}] {d.page_content}"
                for d in documents
            )

        chain = retriever | RunnableLambda(cite)
        text = chain.invoke("what did I return last month?")
        assert text.startswith("[return:C-17:O-1 v1 trust ") and "kettle" in text
        documents = asyncio.run(retriever.ainvoke("what did I return last month?"))
        first = documents[0]
        assert first.metadata["memory_key"] == "return:C-17:O-1"
        assert first.metadata["valid_to"] is None and first.metadata["valid_from"]
        assert set(first.metadata["scores"]) >= {"final", "trust", "vector", "keyword"}
        assert "<" in first.page_content  # the rendered XML block


def test_a_llamaindex_query_over_the_retriever(doors: Doors) -> None:
    setup = doors.setup
    with Memory(
        setup.broker, setup.topics, credential=doors.keys["agent"], timeout=guard(30)
    ) as memory:
        retriever = MemstreamLlamaRetriever(memory, anchors=[("product", "X1")])  # no tenant
        named = MemstreamLlamaRetriever(memory, doors.tenant, anchors=[("product", "X1")])
        assert named.retrieve("what does the X1 charge over?")[0].node.metadata["version"] == 2
        # No LLM: the no-text synthesizer returns the retrieved nodes as the sources.
        engine = RetrieverQueryEngine(
            retriever=retriever, response_synthesizer=NoText(llm=MockLLM())
        )
        response = engine.query("what does the X1 charge over?")
        top = response.source_nodes[0]
        assert top.node.metadata["memory_key"] == "spec:X1"
        assert top.node.metadata["version"] == 2 and "USB-C" in top.node.get_content()
        assert top.score is not None and 0 < top.score <= 1
        nodes = asyncio.run(retriever.aretrieve("what does the X1 charge over?"))
        assert nodes[0].node.metadata["version"] == 2
