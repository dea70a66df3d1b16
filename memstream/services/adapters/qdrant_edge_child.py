"""The child process of an HNSW build (``qdrant_edge_build``): ``python -m`` this module with
a shard copy's directory and the vectors' dimension. It loads the copy as a worker would, but
with every segment to be indexed (``BUILDING``), optimises it (HNSW and segment merges, as the
engine plans them), flushes and closes it; exit 0 when done. The worker swaps the copy in only
after that.

With ``--compact`` first, the child of an erasure's rewrite of a large shard instead
(``qdrant_edge.vacuum_shard``, on a copy as for a build); a third argument says how many of
its points no index covers (a built segment rewritten then keeps an index)."""

from __future__ import annotations

import sys
from pathlib import Path

from memstream.services.adapters.qdrant_edge import BUILDING, load_shard, vacuum_shard


def main(argv: list[str]) -> int:
    compact = argv[:1] == ["--compact"]
    args = argv[1:] if compact else argv
    if not 2 <= len(args) <= 2 + compact or not all(a.isdigit() for a in args[1:]):
        name = __spec__.name if __spec__ else __name__
        print(f"usage: python -m {name} [--compact] SHARD_DIR DIMENSION [UNINDEXED]")
        return 2
    if compact:
        vacuum_shard(Path(args[0]), int(args[1]), int(args[2]) if len(args) > 2 else None)
        return 0
    engine = load_shard(Path(args[0]), int(args[1]), BUILDING)
    try:
        engine.optimize()
        engine.flush()
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
