"""A separate process on the learned memory (tests/learning/test_memory_object_store.py): the memory URI and the
AWS variables come from the environment, as for ``kodiai serve``.

    write URI WRITER UNIQUE SHARED GO   wait for file GO, write SHARED memories every writer also writes, then
                                        UNIQUE of its own, one write each; print {"ids": {finding_id: id}}
    compact URI STOP                    compact until file STOP exists (at least twice); print {"compactions": n}
"""

from __future__ import annotations

import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
from learning_helpers import make_record

from kodiai.learning.memory_compaction import compact_memory
from kodiai.learning.setup import open_store_for_provider
from kodiai.learning.types import LearningMemoryRecord

DIM = 16
SHARED_BASE = 1_000_000


class Provider:
    dimensions = DIM
    model = "m"


def vector(finding_id: int) -> np.ndarray:
    v = np.random.default_rng(zlib.crc32(str(finding_id).encode())).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def record(repo: str, finding_id: int) -> LearningMemoryRecord:
    return make_record(repo, finding_id, file_path="a.py", model="m", dim=DIM)


def open_store(uri: str):  # type: ignore[no-untyped-def]
    store = open_store_for_provider(uri, Provider(), mark_stale=False)  # type: ignore[arg-type]
    assert store is not None
    return store


def main(argv: list[str]) -> None:
    if argv[0] == "write":
        uri, writer, unique, shared, go = argv[1], int(argv[2]), int(argv[3]), int(argv[4]), Path(argv[5])
        store = open_store(uri)
        while not go.exists():
            time.sleep(0.01)
        ids: dict[int, int | None] = {}
        findings = [SHARED_BASE + i for i in range(shared)] + [writer * 1000 + i for i in range(unique)]
        for finding_id in findings:
            ids[finding_id] = store.write_memory(record("acme/api", finding_id), vector(finding_id))
        print(json.dumps({"ids": ids}))
    elif argv[0] == "compact":
        uri, stop = argv[1], Path(argv[2])
        store = open_store(uri)
        done = 0
        while done < 2 or not stop.exists():
            compact_memory(store)
            done += 1
            time.sleep(1.0)
        print(json.dumps({"compactions": done}))
    else:
        raise SystemExit(f"unknown command {argv[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
