"""The torch encoders of a sentence-transformers model: a TorchScript graph, or the eager model.

``load_torch`` loads the model directory with the hub switched off and returns a
``TracedEncoder`` for a model of the usual shape (a transformer, mean pooling, normalisation),
checked against the eager model, else an ``EagerEncoder``. Must not import handlers or streams.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memstream.services.adapters.encoder_common import PROBES, offline, passes
from memstream.services.ports import AdapterError

log = logging.getLogger(__name__)


def load_torch(path: Path, *, trace: bool = True) -> TracedEncoder | EagerEncoder:
    offline()
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    except Exception as exc:
        raise AdapterError(f"cannot load the embedding model from {path}: {exc}") from exc
    traced = TracedEncoder.build(model) if trace else None
    return traced or EagerEncoder(model)


def _dimension(model: Any) -> int:
    get_dimension = getattr(model, "get_embedding_dimension", None)
    get_dimension = get_dimension or model.get_sentence_embedding_dimension
    dimension = get_dimension()
    if dimension is None:
        raise AdapterError("the embedding model does not report its dimension")
    return int(dimension)


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads for one call (restored after; the embedder runs one at a time)."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class EagerEncoder:
    """The sentence-transformers model itself (any shape of model)."""

    kind = "eager"

    def __init__(self, model: Any) -> None:
        self._model = model
        self.dimension = _dimension(model)

    def encode(
        self, texts: Sequence[str], batch_size: int, threads: int | None
    ) -> list[list[float]]:
        with _torch_threads(threads):
            vectors = self._model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return [v.tolist() for v in vectors]


class TracedEncoder:
    """The model's transformer, mean pooling and normalisation traced into one TorchScript graph.

    The eager model re-enters Python, and takes the GIL, for every module of every layer: in
    the worker any busy thread stalls it (a lone query measured 9.5 ms alone and 533 ms beside
    a spinning Python thread), where the graph holds the GIL only to tokenise (6.4 and 57 ms).
    Batches run at the same speed either way. ``build`` returns None — and the eager model is
    used — for another shape of model, or when the graph's vectors differ from the eager ones.
    """

    kind = "torch"

    def __init__(self, graph: Any, tokenizer: Any, max_length: int, dimension: int) -> None:
        self._graph = graph
        self._tokenizer = tokenizer
        self._max_length = max_length
        self.dimension = dimension

    @classmethod
    def build(cls, model: Any) -> TracedEncoder | None:
        try:
            encoder = cls._trace(model)
            if encoder is None:
                return None
            expected = model.encode(
                PROBES, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            got = encoder.encode(PROBES, len(PROBES), None)
        except Exception as exc:  # any model this code does not know: the eager path
            log.info("embedding model not traced (%s); using it eagerly", exc)
            return None
        worst = min(
            sum(a * b for a, b in zip(x, y, strict=True))
            for x, y in zip(got, expected, strict=True)
        )
        if worst < 0.9999:
            log.warning("traced embedding model differs from the eager one (cosine %.5f)", worst)
            return None
        return encoder

    @classmethod
    def _trace(cls, model: Any) -> TracedEncoder | None:
        import torch

        modules = list(model)
        names = [type(m).__name__ for m in modules]
        if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return None
        config = modules[1].get_config_dict()
        mode = config.get("pooling_mode")
        legacy_mean = config.get("pooling_mode_mean_tokens") and not any(
            v
            for k, v in config.items()
            if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"
        )
        if mode != "mean" and not legacy_mean:
            return None
        transformer = getattr(modules[0], "auto_model", None) or modules[0].model

        class MeanPooled(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.transformer = transformer

            def forward(self, ids: Any, mask: Any) -> Any:
                hidden = self.transformer(input_ids=ids, attention_mask=mask)[0]
                weights = mask.unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

        tokenizer = model.tokenizer
        # Traced on a padded batch: the attention mask is a real input of the graph.
        example = tokenizer(["a short one", "a longer example of a sentence"], **_PADDED)
        with warnings.catch_warnings(), torch.inference_mode():
            warnings.simplefilter("ignore")
            graph = torch.jit.trace(  # type: ignore[no-untyped-call]
                MeanPooled().eval(), (example["input_ids"], example["attention_mask"])
            )
            graph = torch.jit.freeze(graph)
        return cls(graph, tokenizer, int(model.max_seq_length), _dimension(model))

    def encode(
        self, texts: Sequence[str], batch_size: int, threads: int | None
    ) -> list[list[float]]:
        """Unit vectors of ``texts`` in order; longest first in batches (less padding)."""
        import torch

        vectors: list[list[float]] = [[] for _ in texts]
        with torch.inference_mode(), _torch_threads(threads):
            for chosen in passes(texts, batch_size):
                batch = self._tokenizer(
                    [texts[i] for i in chosen], max_length=self._max_length, **_PADDED
                )
                out = self._graph(batch["input_ids"], batch["attention_mask"]).tolist()
                for i, vector in zip(chosen, out, strict=True):
                    vectors[i] = vector
        return vectors


_PADDED: dict[str, Any] = {"return_tensors": "pt", "padding": True, "truncation": True}
