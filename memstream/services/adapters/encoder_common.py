"""What the embedding adapter and its encoders share (``embedding``, ``onnx_encoder``,
``torch_encoder``): the probe texts, the passes of a batch, the model's digest and the hub
switched off. Its own module so that the encoders need not import the embedder that loads them.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

PROBES = [
    "hi",
    "Did customer C-17 return the XR-500 headphones?",
    "客户申请退货，订单号 A-1001",
    "a long text " * 200,  # beyond the model's window: truncated alike
]


def passes(texts: Sequence[str], size: int) -> list[list[int]]:
    """Indices of ``texts`` in passes of ``size``, longest first (less padding per pass)."""
    order = longest_first(texts)
    return [order[start : start + size] for start in range(0, len(order), size)]


def longest_first(texts: Sequence[str]) -> list[int]:
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


@functools.lru_cache(maxsize=8)
def model_digest(model_dir: Path) -> str:
    """sha256 of the model directory's files (weights, configs, vocabulary): which model this
    is, for the export cache and the index's record of its encoder."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in model_dir.rglob("*")
        if p.is_file() and p.suffix in {".json", ".safetensors", ".bin", ".txt", ".model"}
    )
    for path in files:
        digest.update(str(path.relative_to(model_dir)).encode())
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def offline() -> None:
    """No hub, no progress bars, no advisory warnings: the model is a local directory."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
