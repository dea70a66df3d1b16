"""The child process of an HNSW build (``qdrant_edge_build``): ``python -m`` this module with
a shard copy's directory and the vectors' dimension. It loads the copy as a worker would, but
with every segment to be indexed (``BUILDING``), optimises it (HNSW and segment merges, as the
engine plans them), flushes and closes it; exit 0 when done. The worker swaps the copy in only
after that."""

from __future__ import annotations

import sys
from pathlib import Path

from memstream.services.adapters.qdrant_edge import BUILDING, load_shard


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print(f"usage: python -m {__spec__.name if __spec__ else __name__} SHARD_DIR DIMENSION")
        return 2
    engine = load_shard(Path(argv[0]), int(argv[1]), BUILDING)
    try:
        engine.optimize()
        engine.flush()
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
