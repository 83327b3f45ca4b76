"""An agent's small memory (seed 004 §4.3): recent turns kept verbatim, older ones as summaries
in a capped SQLite index with embeddings, so the index never outgrows the model.

The long-term index holds at most `max_entries` summaries and `max_bytes` bytes (summary text
plus its float32 vector); every insertion evicts the oldest entries until both caps hold, inside
the insertion's own transaction. Recall is cosine similarity over the stored vectors and returns
plain `(text, score)` pairs, which the context builder's task-context layer takes as snippets.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from edgepick.errors import EdgepickError

DEFAULT_MAX_ENTRIES = 256
DEFAULT_MAX_BYTES = 1 << 20  # 1 MiB: small beside even a 135M-parameter model (~90 MB)
SCHEMA = """
CREATE TABLE IF NOT EXISTS summaries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    text TEXT NOT NULL,
    vector BLOB NOT NULL,
    dim INTEGER NOT NULL,
    bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (one INTEGER PRIMARY KEY CHECK (one = 1),
                                   entries INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
"""


class Embedder(Protocol):
    def embed(self, texts: list[str]) -> np.ndarray:
        """One L2-normalised row per text."""


class LongTermMemory(AbstractContextManager):
    """Summaries with embeddings in SQLite under hard caps on entries and bytes."""

    def __init__(self, path: str | Path, embedder: Embedder,
                 max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES):
        if max_entries < 1 or max_bytes < 1:
            raise EdgepickError("memory caps must be positive")
        self.embedder, self.max_entries, self.max_bytes = embedder, max_entries, max_bytes
        try:
            self.db = sqlite3.connect(str(path))
            # WAL without a sync per commit: an agent's memory may lose its last summary on a
            # power cut, never its consistency.
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise EdgepickError(f"{path}: not a usable memory database ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, text: str, vector: np.ndarray | None = None) -> int:
        """Store one summary (embedded here unless `vector` is given); returns its id."""
        text = text.strip()
        if not text:
            raise EdgepickError("memory: an empty summary is not stored")
        vec = np.asarray(self.embedder.embed([text])[0] if vector is None else vector,
                         dtype=np.float32).ravel()
        blob = vec.tobytes()
        size = len(text.encode("utf-8")) + len(blob)
        if size > self.max_bytes:
            raise EdgepickError(f"memory: one summary of {size} bytes exceeds the cap of "
                                f"{self.max_bytes} bytes")
        with self.db:  # the insertion and its evictions are one transaction
            cur = self.db.execute(
                "INSERT INTO summaries (created, text, vector, dim, bytes) VALUES (?,?,?,?,?)",
                (time.time(), text, blob, vec.size, size))
            self.db.execute("UPDATE totals SET entries = entries + 1, bytes = bytes + ?", (size,))
            self._evict()
        return int(cur.lastrowid)

    def _evict(self) -> None:
        entries, total = self.db.execute("SELECT entries, bytes FROM totals").fetchone()
        while entries > self.max_entries or total > self.max_bytes:
            oldest = self.db.execute(
                "SELECT id, bytes FROM summaries ORDER BY id LIMIT 1").fetchone()
            self.db.execute("DELETE FROM summaries WHERE id = ?", (oldest[0],))
            entries, total = entries - 1, total - oldest[1]
            self.db.execute("UPDATE totals SET entries = ?, bytes = ?", (entries, total))

    def stats(self) -> dict:
        entries, total = self.db.execute("SELECT entries, bytes FROM totals").fetchone()
        return {"entries": entries, "bytes": total, "max_entries": self.max_entries,
                "max_bytes": self.max_bytes}

    def recall(self, query: str, k: int = 3, min_score: float = 0.0) -> list[tuple[str, float]]:
        """The `k` stored summaries nearest to `query`, as (text, cosine similarity)."""
        rows = self.db.execute("SELECT text, vector, dim FROM summaries").fetchall()
        if not rows:
            return []
        q = np.asarray(self.embedder.embed([query])[0], dtype=np.float32).ravel()
        rows = [r for r in rows if r[2] == q.size]  # vectors of another embedder are skipped
        if not rows:
            return []
        mat = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        sims = mat @ q / np.maximum(np.linalg.norm(mat, axis=1) * np.linalg.norm(q), 1e-12)
        order = np.argsort(-sims)[:k]
        return [(rows[i][0], float(sims[i])) for i in order if sims[i] >= min_score]


class Memory:
    """Short-term: the last `recent_turns` exchanges verbatim. A turn pushed out is summarised
    (by `summarise`, e.g. the edge model itself) into the long-term index, when there is one."""

    def __init__(self, long_term: LongTermMemory | None = None, recent_turns: int = 3,
                 summarise: Callable[[str, str], str] | None = None) -> None:
        self.long_term = long_term
        self.recent: deque[tuple[str, str]] = deque(maxlen=recent_turns)
        self.summarise = summarise or (lambda user, answer: f"User: {user}\nAnswer: {answer}")

    def add_turn(self, user: str, answer: str) -> None:
        if len(self.recent) == self.recent.maxlen and self.long_term is not None:
            old_user, old_answer = self.recent[0]
            self.long_term.add(self.summarise(old_user, old_answer))
        self.recent.append((user, answer))

    def history(self) -> list[dict]:
        out: list[dict] = []
        for user, answer in self.recent:
            out += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        return out

    def recall(self, query: str, k: int = 3) -> list[tuple[str, float]]:
        return self.long_term.recall(query, k) if self.long_term is not None else []
