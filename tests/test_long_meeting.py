"""A 10-minute meeting through the live pipeline: memory stays flat and the online diarizer's
state stays bounded (issue 3 "Speed and memory", issue 8 item 6).

The meeting is four speech-dense recordings of ``../shared/eval`` (about 2 minutes, 13 voices)
played round and round, unpaced, with the default models and a SQLite store: after the first
pass every voice and every utterance length has been heard once, so whatever still grows is
growth with meeting length. No timed assertion: the 4-hour run and the speed targets live in
``scripts/bench.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _pipeline_support import components, eval_file, needs_eval

LOOP_FILES = ("sample", "test", "diarizationExample", "trn01")
MEETING_SECONDS = 600.0
WARM_UP_SECONDS = 180.0  # one pass (121 s) plus a minute
MID_SECONDS = 300.0
SAMPLE_EVERY = 5.0

# Memory in use: the C heap's bytes handed out and not returned (glibc mallinfo2, voicekit.perf.
# heap_in_use_mb), with the interpreter on PYTHONMALLOC=malloc so that Python objects are counted
# too. It is what a leak grows, and unlike the RSS it does not move with the pages the allocator
# keeps: the RSS wanders by 3-4 MiB over a 7-minute window here and by up to 20 MiB on CI (two CI
# runs read +87 and +196 MiB/h from it, one with 682 MiB both after warm-up and at 10 min), which no
# 10-minute loop can tell from a slope. The heap's slope after warm-up must stay within the 4-hour
# target's rate (+150 MB = 143 MiB between minute 10 and hour 4: 37 MiB/h): measured here
# +10-15 MiB/h, nearly all of it the refinement history below and the committed turns; a leak of
# each utterance's audio (about 530 utterances/h on this loop, 5 s of float32 each) is 160 MiB/h.
# The RSS is printed, and bounded only by the whole 4-hour budget (the long loop of
# scripts/bench.py --loop-minutes checks the RSS itself, docs/performance.md).
# The window history the diarizer keeps for refinement is the one thing meant to grow (at most 4
# windows of 1 KiB per second of speech: <= 14.3 MiB/h; measured 8.1 MiB/h on this loop): it is
# checked exactly below, from its arrays.
HEAP_SLOPE_TOLERANCE = 37.0
RSS_GROWTH_MAX = 143.0
HISTORY_MIB_PER_HOUR_MAX = 14.3 * 1.05  # 4 windows/s x (256 float32 + 2 float64), 5 % for edge windows


def _diarizer_live_state(diarizer) -> int:
    """Bytes of everything the online diarizer keeps, except the refinement history and the
    models/options it was built with."""
    from voicekit.perf import state_bytes

    skip = {"history", "encoder", "opt", "options"}
    return sum(state_bytes(v) for k, v in vars(diarizer).items() if k not in skip)


@needs_eval
def test_ten_minute_meeting_keeps_memory_flat_and_diarizer_state_bounded(tmp_path):
    # the meeting runs in a fresh process, as a real one does: inside the test session the RSS also
    # carries everything earlier tests allocated (1.1 GB)
    here = Path(__file__).resolve().parent   # tests/: the child imports this module and its helpers
    code = f"from test_long_meeting import run_meeting; run_meeting({str(tmp_path)!r})"
    env = dict(os.environ, PYTHONMALLOC="malloc")  # Python objects on the C heap: heap_in_use_mb counts them
    child = subprocess.run([sys.executable, "-c", code], cwd=here, env=env, capture_output=True, text=True,
                           timeout=1800)
    print(child.stdout)
    assert child.returncode == 0, child.stderr[-4000:]


def run_meeting(tmp: str) -> None:
    """The 10-minute meeting and its checks (AssertionError when one fails)."""
    from voicekit.perf import heap_in_use_mb, loop_blocks, release_free_memory, rss_mb, slope_per_hour, state_bytes
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.store import MeetingStore

    store = MeetingStore(Path(tmp) / "meeting.sqlite")
    pipe = Pipeline(PipelineOptions(), components(), store=store)
    rss: list[tuple[float, float]] = []
    heap: list[tuple[float, float]] = []
    history: list[tuple[float, float]] = []
    mid: dict = {}

    def progress(seconds: float) -> None:
        if not rss or seconds - rss[-1][0] >= SAMPLE_EVERY:
            release_free_memory()
            rss.append((seconds, rss_mb()))
            heap.append((seconds, heap_in_use_mb()))
            history.append((seconds, state_bytes(pipe.diarizer.history) / 2**20))
        if not mid and seconds >= MID_SECONDS:
            mid["speakers"] = {s.label: (state_bytes(s), s.seconds) for s in pipe.diarizer.speakers}
            mid["live"] = _diarizer_live_state(pipe.diarizer)

    try:
        result = pipe.run(loop_blocks([eval_file(f).audio for f in LOOP_FILES], MEETING_SECONDS),
                          progress=progress)
    finally:
        store.close()
    assert abs(result.audio_seconds - MEETING_SECONDS) < 0.1

    heap_slope = slope_per_hour(heap, after=WARM_UP_SECONDS)
    at_warm = next(v for t, v in rss if t >= WARM_UP_SECONDS)
    heap_at_warm = next(v for t, v in heap if t >= WARM_UP_SECONDS)
    growth = slope_per_hour(history)
    speakers = pipe.diarizer.speakers
    print(f"\n{len(result.turns)} turns; heap in use {heap[0][1]:.1f} MiB at start, {heap_at_warm:.1f} after warm-up, "
          f"{heap[-1][1]:.1f} at 10 min, slope after warm-up {heap_slope:+.1f} MiB/h (tolerance "
          f"{HEAP_SLOPE_TOLERANCE}); RSS {rss[0][1]:.0f} MiB at start, {at_warm:.0f} after warm-up, "
          f"{rss[-1][1]:.0f} at 10 min (slope {slope_per_hour(rss, after=WARM_UP_SECONDS):+.1f} MiB/h); "
          f"refinement history {history[-1][1]:.2f} MiB, {growth:.1f} MiB/h; speakers {len(mid['speakers'])} "
          f"at 5 min, {len(speakers)} at 10 min; live diarizer state {mid['live']} -> "
          f"{_diarizer_live_state(pipe.diarizer)} bytes")

    # memory in use: flat after warm-up (within the 4-hour target's rate), in both directions
    assert abs(heap_slope) <= HEAP_SLOPE_TOLERANCE, f"heap in use grew {heap_slope:+.1f} MiB/h after warm-up"
    # the RSS: not the whole 4-hour budget spent in 7 minutes (a leak outside malloc: mmaps, threads)
    assert max(v for t, v in rss if t >= WARM_UP_SECONDS) - at_warm <= RSS_GROWTH_MAX
    # the refinement history grows with speech only, at its stated rate, and nothing else does
    assert 0 < growth <= HISTORY_MIB_PER_HOUR_MAX
    # per speaker: a speaker already known at 5 min, who kept talking, holds no more state at
    # 10 min than then (a centroid, plus any bounded exemplar set, not every window heard)
    grew = []
    for s in speakers:
        if s.label in mid["speakers"]:
            before, seconds_before = mid["speakers"][s.label]
            if s.seconds > seconds_before + 10:
                grew.append((s.label, before, state_bytes(s)))
    assert grew, "no speaker known at 5 min spoke again: the loop did not repeat voices"
    assert all(after <= before for _, before, after in grew), grew
    # the whole live state: at most one new speaker's worth of state per speaker opened since
    per_speaker = max(state_bytes(s) for s in speakers)
    new = len(speakers) - len(mid["speakers"])
    assert _diarizer_live_state(pipe.diarizer) <= mid["live"] + max(0, new) * per_speaker
    # the same 13 voices come back on every pass: the speaker list stops growing once they have
    # all been heard (measured: 8 speakers at 5 min, 8 at 10 min), so per-turn cost stays flat
    assert new <= 2, f"{new} speakers opened between minute 5 and 10 of a looped meeting"
