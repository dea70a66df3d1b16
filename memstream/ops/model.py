"""``memstream model build``: export the embedding model to ONNX into the model cache, now.

A worker exports at its first start otherwise (seconds). Prints, per encoder, the file, the
least cosine to the torch model's vectors of the probe texts and the time taken; exit status 1
when an encoder cannot be used (the worker would fall back to torch: the log line says why).
"""

from __future__ import annotations

import logging
import time

from rich.console import Console
from rich.table import Table

from memstream.services.settings import Settings

out = Console(highlight=False)


def model_build(settings: Settings, encoder: str) -> int:
    from memstream.services import bootstrap

    logging.getLogger("memstream").setLevel(logging.INFO)
    path = bootstrap.resolve_model_path(settings)
    kinds = ["onnx", "onnx-int8"] if encoder == "all" else [encoder]
    if kinds == ["torch"]:
        out.print("the torch encoder needs no export", markup=False)
        return 0
    table = Table(title=f"memstream model build · {path.name}", title_justify="left")
    for column in ("encoder", "file", "MB", "least cosine to torch", "seconds"):
        table.add_column(column, justify="left" if column in ("encoder", "file") else "right")
    failed = 0
    for kind in kinds:
        started = time.perf_counter()
        built = bootstrap.export_encoder(settings, kind)
        seconds = time.perf_counter() - started
        if built is None:
            failed += 1
            table.add_row(kind, "not usable (see the log line)", "", "", f"{seconds:.1f}")
            continue
        onnx_file, least_cosine = built
        table.add_row(
            kind,
            str(onnx_file),
            f"{onnx_file.stat().st_size / 1e6:.0f}",
            f"{least_cosine:.5f}",
            f"{seconds:.1f}",
        )
    out.print(table)
    return 1 if failed else 0
