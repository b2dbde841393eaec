"""Benchmark the ladder's cheap rungs (T1–T3, T5): microseconds per decision.

Runs 10,000 messages (default) through ``TurnTaker.decide`` for each rung, with three members and
no director, and prints mean / median / p99 in microseconds plus the machine it ran on.

    python scripts/bench_turntaking.py [--messages 10000] [--members 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from voicekit.attribution import SpeakerLabel  # noqa: E402
from voicekit.turntaking import Member, TurnTaker  # noqa: E402

NAMES = ["Iris", "Zoë", "Anaïs", "Mei", "Наташа", "美咲", "Elena", "Olek"]

RUNGS = {
    "T1 mention": [
        "{a}, what do you think about the schedule for next week?",
        "Could you take a look at the latest draft, {a}?",
        "I wonder whether {a} has seen the numbers from the irises project.",
    ],
    "T2 group (names)": [
        "{a} and {b}, please compare notes on the budget.",
        "{b}, then {a}: your views on the launch?",
    ],
    "T2 group (room)": [
        "What do you two think about moving the deadline?",
        "Everyone, quick round of updates please.",
        "Did you all read the memo before the meeting?",
    ],
    "T3 continuation": ["yes", "haha why?", "no way", "ok and then?", "sure"],
    "T5 fallback": [
        "I had the worst day at work today and I am still annoyed about it.",
        "The contractors underestimated the wiring work by about three weeks.",
        "Guys like him never text back, which is honestly a pattern by now.",
    ],
}


EXPECT = {"mention": "mention", "group": "group_address", "continuation": "continuation",
          "fallback": "fallback"}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def bench(rung: str, templates: list[str], n: int, n_members: int) -> list[float]:
    members = [Member(name, f"You are {name}.") for name in NAMES[:n_members]]
    taker = TurnTaker(members)
    label = SpeakerLabel("Alice", None, "mic")
    names = [m.name for m in members]
    messages = [
        templates[i % len(templates)].format(a=names[i % len(names)], b=names[(i + 1) % len(names)])
        for i in range(n)
    ]
    expected = rung.split()[1]
    times: list[float] = []
    for i, text in enumerate(messages):
        if expected == "continuation":
            taker.record_reply(names[i % len(names)])
        t0 = time.perf_counter_ns()
        d = taker.decide(text, label)
        times.append((time.perf_counter_ns() - t0) / 1000.0)
        if not d.decided_by.value.startswith(EXPECT[expected]):
            raise SystemExit(f"{rung}: {text!r} decided by {d.decided_by.value}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000, help="messages per rung")
    parser.add_argument("--members", type=int, default=3, help="members in the room (2-8)")
    args = parser.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"{args.messages} messages per rung, {args.members} members, no director, no listeners")
    print(f"{'rung':<20} {'mean µs':>9} {'median µs':>10} {'p99 µs':>8} {'max µs':>8}")
    for rung, templates in RUNGS.items():
        bench(rung, templates, 500, args.members)  # warm-up
        times = bench(rung, templates, args.messages, args.members)
        times_sorted = sorted(times)
        p99 = times_sorted[int(0.99 * (len(times) - 1))]
        print(
            f"{rung:<20} {statistics.fmean(times):9.2f} {statistics.median(times):10.2f} "
            f"{p99:8.2f} {times_sorted[-1]:8.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
