#!/usr/bin/env python3
"""Benchmark: the cost of committing a turn to the author register (A12).

For each size N (default 1,000 and 10,000), fills a meeting's register with N distinct named
sources (with look-alike groups among them), then times ``AuthorRegister.record_turn`` for new
turns: half from sources already in the register, half from new ones, a fifth of the new ones
with a name that reads like an existing one. The register runs on a SQLite file with
``PRAGMA synchronous=OFF``, so disk sync is excluded; the time is compute (Python, ICU, SQLite
B-tree work). Prints per-commit mean / median / p95 and the machine it ran on.

    python scripts/bench_register.py [--sizes 1000 10000] [--commits 2000] [--pg DSN]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sqlite3
import statistics
import string
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import icu  # noqa: E402

from voicekit.attribution import AuthorRegister  # noqa: E402
from voicekit.turns import SpeakerTurn  # noqa: E402


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def make_name(rng: random.Random) -> str:
    first = rng.choice(string.ascii_uppercase) + "".join(rng.choice(string.ascii_lowercase)
                                                         for _ in range(rng.randint(3, 8)))
    last = rng.choice(string.ascii_uppercase) + "".join(rng.choice(string.ascii_lowercase)
                                                        for _ in range(rng.randint(4, 9)))
    return f"{first} {last}"


def lookalike(name: str, rng: random.Random) -> str:
    variants = [name.upper(), name.lower(), name.replace("a", "\u0430").replace("o", "\u043e"),
                name[:2] + "\u200b" + name[2:]]
    return rng.choice(variants)


def turn(name: str, source: str) -> SpeakerTurn:
    return SpeakerTurn(speaker=source, text="hello", start=0.0, end=1.0, channel="mic",
                       metadata={"sender_name": name, "source_id": source})


def fill(reg, conn, n: int, rng: random.Random, begin, end, base: int = 0) -> list[tuple[str, str]]:
    sources = []
    tid = base
    begin()
    for i in range(n):
        name = make_name(rng) if i % 10 else lookalike(sources[-1][0], rng) if sources else make_name(rng)
        src = f"src-{i}"
        tid += 1
        reg.record_turn(conn, tid, turn(name, src))
        sources.append((name, src))
    end()
    return sources


def bench(reg, conn, sources, commits: int, rng: random.Random, begin, end, first_id: int):
    compute, whole = [], []
    tid = first_id
    for i in range(commits):
        if i % 2 == 0:
            name, src = rng.choice(sources)
        else:
            base = rng.choice(sources)[0]
            name = lookalike(base, rng) if i % 10 == 1 else make_name(rng)
            src = f"new-{i}"
            sources.append((name, src))
        tid += 1
        t0 = time.perf_counter()
        begin()
        t1 = time.perf_counter()
        reg.record_turn(conn, tid, turn(name, src))
        t2 = time.perf_counter()
        end()
        t3 = time.perf_counter()
        compute.append(t2 - t1)
        whole.append(t3 - t0)
    return compute, whole


def report(label: str, n: int, compute, whole) -> None:
    ms = lambda xs: [x * 1000 for x in xs]  # noqa: E731
    c, w = ms(compute), ms(whole)
    c.sort()
    print(f"{label:8s} {n:>7,d} sources: record_turn mean {statistics.mean(c):.3f} ms, "
          f"median {statistics.median(c):.3f} ms, p95 {c[int(len(c) * 0.95)]:.3f} ms; "
          f"whole transaction (lock, commit without sync) mean {statistics.mean(w):.3f} ms")


def run_sqlite(n: int, commits: int, seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(os.path.join(tmp, "bench.db"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        AuthorRegister.ensure_schema(conn)
        reg = AuthorRegister("bench")

        def begin():
            conn.execute("BEGIN IMMEDIATE")

        def end():
            conn.execute("COMMIT")

        sources = fill(reg, conn, n, rng, begin, end)
        compute, whole = bench(reg, conn, sources, commits, rng, begin, end, n)
        report("sqlite", n, compute, whole)
        conn.close()


def run_pg(dsn: str, n: int, commits: int, seed: int) -> None:
    import uuid

    import psycopg

    from voicekit.store.postgres import PostgresAuthorRegister

    rng = random.Random(seed)
    conn = psycopg.connect(dsn)
    PostgresAuthorRegister.ensure_schema(conn)
    reg = PostgresAuthorRegister("bench-" + uuid.uuid4().hex)
    base = random.SystemRandom().randrange(1 << 40, 1 << 50)  # turn ids unique in a shared database
    sources = fill(reg, conn, n, rng, lambda: None, conn.commit, base)
    compute, whole = bench(reg, conn, sources, commits, rng, lambda: None, conn.commit, base + n)
    report("postgres", n, compute, whole)
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="register sizes (turns) to time")
    ap.add_argument("--commits", type=int, default=2000, help="turns committed per timing")
    ap.add_argument("--seed", type=int, default=7, help="random seed of the generated turns")
    ap.add_argument("--pg", metavar="DSN", help="also run against PostgreSQL (includes round trips)")
    args = ap.parse_args()
    print(f"machine: {platform.platform()}; CPU: {cpu_name()} ({os.cpu_count()} logical); "
          f"Python {platform.python_version()}; SQLite {sqlite3.sqlite_version}; ICU {icu.ICU_VERSION}")
    for n in args.sizes:
        run_sqlite(n, args.commits, args.seed)
    if args.pg:
        for n in args.sizes:
            run_pg(args.pg, n, args.commits, args.seed)


if __name__ == "__main__":
    main()
