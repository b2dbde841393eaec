"""The measurement scripts run and report what the doc says (T4 director share, rung timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def test_t4_set_of_200_reports_director_count():
    out = run(str(SCRIPTS / "turntaking_set.py"))
    assert out.startswith("200 messages, 2 members (Iris, Elena)")
    assert "reached the director: 52 of 200 (26.0 %)" in out
    assert "  continuation     92" in out


def test_t5_benchmark_runs_every_cheap_rung():
    out = run(str(SCRIPTS / "bench_turntaking.py"), "--messages", "300")
    assert out.startswith("machine: ")
    for rung in ("T1 mention", "T2 group (names)", "T2 group (room)", "T3 continuation", "T5 fallback"):
        line = next(l for l in out.splitlines() if l.startswith(rung))
        mean_us = float(line[len(rung):].split()[0])
        assert mean_us > 0  # microseconds (16-26 measured, docs/turn-taking.md); speed is the script's to report
