"""OnnxEncoder: the sentence-transformers model exported once to ONNX and run by ONNX Runtime.

``build_onnx`` exports the model directory's transformer + mean pooling + normalisation with
``torch.onnx.export(dynamo=False)`` and eager attention (the dynamo graph measured 20–30 % slower
and defeats ORT's attention fusion), optionally quantised to int8 (``quantize_dynamic``, QInt8
per channel, after ORT's optimiser and symbolic shape inference: per-tensor int8 measured a
minimum cosine of 0.908 against torch). The export is cached under a directory keyed by the
weights' hash and the torch / onnxruntime versions, beside the torch model's vectors of a few
probe texts; every load checks the session against those vectors. Texts are tokenised with
``tokenizers`` from the model directory's ``tokenizer.json``. torch is imported only to export.

Returns None — the caller falls back to the traced torch encoder — when onnxruntime or
tokenizers is missing, the model is of another shape, or the vectors differ. Must not import
handlers or streams.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from memstream.services.adapters.encoder_common import PROBES, model_digest, offline, passes

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the export below changes: older caches are not reused
OPSET = 17
# Least cosine to the torch model's vector on every probe. fp32 gives the same vectors (measured
# 1.0000); int8 is an approximation (measured min 0.959, mean 0.991 over 2,048 texts).
AGREEMENT = {"onnx": 0.9999, "onnx-int8": 0.95}


class ModelShapeError(ValueError):
    """The model is not transformer + mean pooling (+ normalisation): nothing to export."""


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "none"


def cache_key(model_dir: Path) -> str:
    """Hash of what the export depends on: the model's files, torch and onnxruntime."""
    digest = hashlib.sha256(model_digest(model_dir).encode())
    for name in ("torch", "onnxruntime", "onnx", "transformers"):
        digest.update(f";{name}={_version(name)}".encode())
    digest.update(f";format={EXPORT_FORMAT};opset={OPSET}".encode())
    return digest.hexdigest()


def _mean_pooled(model_dir: Path) -> int:
    """The model's window (max_seq_length), or ModelShapeError if it is not mean-pooled."""
    modules = json.loads((model_dir / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ModelShapeError(f"modules {kinds}")
    pooling = json.loads((model_dir / modules[1]["path"] / "config.json").read_text())
    mean = pooling.get("pooling_mode") == "mean" or (
        pooling.get("pooling_mode_mean_tokens")
        and not any(
            v
            for k, v in pooling.items()
            if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"
        )
    )
    if not mean:
        raise ModelShapeError("pooling is not the mean of the tokens")
    config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    return int(config["max_seq_length"])


class OnnxEncoder:
    """Unit vectors from an ONNX Runtime session. ``run`` releases the GIL (measured: a Python
    thread beside a run keeps its pace), and ``tokenizers`` releases it in ``encode_batch``."""

    def __init__(self, session: Any, tokenizer: Any, kind: str) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self.kind = kind
        self.dimension = int(session.get_outputs()[0].shape[-1])

    @classmethod
    def open(cls, model_dir: Path, onnx_file: Path, kind: str, threads: int) -> OnnxEncoder:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        window = _mean_pooled(model_dir)
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=window)
        pad = _pad_token(model_dir)
        pad_id = tokenizer.token_to_id(pad)
        if pad_id is None:
            raise ModelShapeError(f"the tokenizer has no pad token {pad!r}")
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad)  # to the longest of a batch
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads  # 0: ORT's default, one per core
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning threads burn the cores that the consumer, Postgres and queries share.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.log_severity_level = 3
        session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
        return cls(session, tokenizer, kind)

    def encode(
        self, texts: Sequence[str], batch_size: int, threads: int | None = None
    ) -> list[list[float]]:
        """Unit vectors of ``texts`` in order; longest first in passes of ``batch_size``
        (``threads`` is the session's, set when it opens)."""
        import numpy as np

        vectors: list[list[float]] = [[] for _ in texts]
        for chosen in passes(texts, batch_size):
            encoded = self._tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            (out,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            for i, vector in zip(chosen, out.tolist(), strict=True):
                vectors[i] = vector
        return vectors


def _pad_token(model_dir: Path) -> str:
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        path = model_dir / name
        if path.exists():
            pad = json.loads(path.read_text()).get("pad_token")
            if isinstance(pad, dict):
                pad = pad.get("content")
            if isinstance(pad, str):
                return pad
    return "[PAD]"


def _export(model: Any, target: Path) -> None:
    """transformer + mean pooling + normalisation → ``target`` (ONNX, dynamic batch and length)."""
    import warnings

    import torch

    transformer = getattr(model[0], "auto_model", None) or model[0].model
    # Eager attention exports as plain MatMul/Softmax, which ORT fuses into its attention kernel;
    # the SDPA path exports as a graph ORT does not recognise.
    transformer.config._attn_implementation = "eager"

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, ids: Any, mask: Any) -> Any:
            hidden = self.transformer(input_ids=ids, attention_mask=mask)[0]
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    example = model.tokenizer(
        ["a short one", "a longer example of a sentence"], return_tensors="pt", padding=True
    )
    dynamic = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            MeanPooled().eval(),
            (example["input_ids"], example["attention_mask"]),
            str(target),
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": dynamic,
                "attention_mask": dynamic,
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
        )


def _quantize(fp32: Path, target: Path, work: Path, heads: int, hidden: int) -> None:
    """int8 weights, per channel, of ORT's optimised graph (shape inference first: the
    quantiser needs every tensor's shape, which the fused graph loses)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    from onnxruntime.transformers.optimizer import optimize_model

    before = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the optimiser and quantiser log every node on the root
    try:
        optimised = optimize_model(
            str(fp32), model_type="bert", num_heads=heads, hidden_size=hidden
        )
        inferred = SymbolicShapeInference.infer_shapes(optimised.model, auto_merge=True)
        shaped = work / "shaped.onnx"
        onnx.save(inferred, str(shaped))
        quantize_dynamic(str(shaped), str(target), per_channel=True, weight_type=QuantType.QInt8)
    finally:
        logging.disable(before)


def export(model_dir: Path, target_dir: Path) -> None:
    """Write ``model.onnx`` and ``probes.json`` (the torch model's vectors of PROBES) into
    ``target_dir`` (a fresh directory), from the model in ``model_dir``."""
    offline()
    from sentence_transformers import SentenceTransformer

    _mean_pooled(model_dir)
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    probes = model.encode(
        PROBES, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    _export(model, target_dir / "model.onnx")
    (target_dir / "probes.json").write_text(json.dumps(probes.tolist()))


def cached_export(model_dir: Path, cache_root: Path, kind: str = "onnx") -> Path:
    """The ONNX file of ``kind`` for this model, exported (and quantised) first if not cached.

    Written to a temporary name and renamed into place: a process that exports at the same
    time loses the rename and uses the winner's files."""
    _mean_pooled(model_dir)  # ModelShapeError before anything is written
    key = cache_key(model_dir)
    target = cache_root / f"{model_dir.name}-{key[:24]}"
    if not (target / "probes.json").exists():
        cache_root.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=".export-", dir=cache_root))
        try:
            export(model_dir, work)
            try:
                work.rename(target)
            except OSError:  # exported meanwhile by another process
                if not (target / "probes.json").exists():
                    raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log.info("exported %s to ONNX in %.1f s", model_dir, time.perf_counter() - started)
    if kind != "onnx-int8":
        return target / "model.onnx"
    quantised = target / "model-int8.onnx"
    if not quantised.exists():
        config = json.loads((model_dir / "config.json").read_text())
        work = Path(tempfile.mkdtemp(prefix=".quantise-", dir=target))
        try:
            _quantize(
                target / "model.onnx",
                work / quantised.name,
                work,
                int(config["num_attention_heads"]),
                int(config["hidden_size"]),
            )
            os.replace(work / quantised.name, quantised)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return quantised


def agreement(encoder: OnnxEncoder, expected: Sequence[Sequence[float]]) -> float:
    """Least cosine between the encoder's vectors of PROBES and ``expected``."""
    got = encoder.encode(PROBES, len(PROBES))
    return min(
        sum(a * b for a, b in zip(x, y, strict=True)) for x, y in zip(got, expected, strict=True)
    )


def build_onnx(model_dir: Path, cache_root: Path, kind: str, threads: int) -> OnnxEncoder | None:
    """The ONNX encoder of ``kind`` ('onnx' or 'onnx-int8'), checked against the torch model's
    probe vectors; None (logged once) when it cannot be used."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        log.warning("%s encoder unavailable (%s); using the torch encoder", kind, exc)
        return None
    try:
        onnx_file = cached_export(model_dir, cache_root, kind)
        encoder = OnnxEncoder.open(model_dir, onnx_file, kind, threads)
        worst = agreement(encoder, json.loads((onnx_file.parent / "probes.json").read_text()))
    except ModelShapeError as exc:
        log.warning("%s encoder not built (%s); using the torch encoder", kind, exc)
        return None
    except Exception as exc:  # an export or runtime this code does not know: torch answers
        log.warning("%s encoder failed (%r); using the torch encoder", kind, exc)
        return None
    if worst < AGREEMENT[kind]:
        log.warning(
            "%s encoder differs from the torch model (cosine %.5f); using the torch encoder",
            kind,
            worst,
        )
        return None
    return encoder
