"""The eval JSONL that traffic sampling writes (serve/loop/sampling.py): items held until their
cloud reference is settled, appended once, and rewritten whole (atomically) only for
feedback."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Callable


class SampleFile:
    """The eval JSONL of sampled items. An item waiting for its cloud reference is held in
    memory and appended once the reference is settled, so a reference never rewrites the file;
    feedback on an item already written rewrites it whole (atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._held: dict[str, dict] = {}

    def hold(self, row: dict) -> None:
        with self._lock:
            self._held[row["id"]] = row

    def release(self, item_id: str) -> None:
        with self._lock:
            row = self._held.pop(item_id, None)
        if row is not None:
            self.append(row)

    def release_all(self, note: str) -> None:
        with self._lock:
            rows, self._held = list(self._held.values()), {}
        for row in rows:
            row["meta"].update(reference_pending=False, reference_error=note)
            self.append(row)

    def append(self, row: dict) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def update(self, item_id: str, change: Callable[[dict], None]) -> bool:
        with self._lock:
            if item_id in self._held:
                change(self._held[item_id])
                return True
            try:
                lines = self.path.read_text(encoding="utf-8").splitlines()
            except OSError:
                return False
            found = False
            for i, line in enumerate(lines):
                if f'"{item_id}"' not in line:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if row.get("id") == item_id:
                    change(row)
                    lines[i] = json.dumps(row, ensure_ascii=False)
                    found = True
            if found:
                tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}")
                tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
                tmp.replace(self.path)
            return found
