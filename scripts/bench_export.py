"""Time `voicekit export` on a synthetic long meeting (issue 8: 50,000 turns export in seconds).

    python scripts/bench_export.py [--turns 50000]

Builds a meeting store of N two-word turns in a temporary directory and reports the wall-clock
and CPU seconds of the export, and the size of its outputs. Not a test: timing belongs here, the
unit test (tests/test_robust_faults.py) asserts the statement count.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from voicekit.cli import main, machine_line
from voicekit.store import MeetingStore


def build(path: Path, n: int) -> None:
    """A meeting store ``path/meeting.sqlite`` of ``n`` two-word turns of three speakers, 1 s
    apart (also used by tests/test_robust_faults.py)."""
    store = MeetingStore(path / "meeting.sqlite")
    words = json.dumps([[0.0, 0.4, " hello", 0.9, "Speaker A"], [0.4, 0.8, " there", 0.8, "Speaker A"]])
    with store.conn:
        store.conn.executemany(
            'INSERT INTO turns(channel, speaker, sender_name, text, start, "end", words, metadata, emitted_at,'
            " committed_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [("replay", f"Speaker {'ABC'[i % 3]}", "", "hello there", i * 1.0, i * 1.0 + 0.8, words, "{}",
              i + 1.0, 0.0) for i in range(n)])
    store.set_meta(stem="long")
    store.close()


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        build(out, n)
        wall, c = time.perf_counter(), cpu()
        assert main(["export", str(out)]) == 0
        wall, c = time.perf_counter() - wall, cpu() - c
        size = sum(p.stat().st_size for p in out.iterdir() if p.suffix != ".sqlite") / 1e6
        print(f"export of {n} turns: {wall:.2f} s wall, {c:.2f} s CPU, {size:.1f} MB of outputs")
        print(machine_line())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=50_000, help="turns in the generated meeting")
    run(ap.parse_args().turns)
