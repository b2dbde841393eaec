"""A 10-minute meeting through the live pipeline: memory stays flat and the online diarizer's
state stays bounded (issue 3 "Speed and memory", issue 8 item 6).

The meeting is four speech-dense recordings of ``../shared/eval`` (about 2 minutes, 13 voices)
played round and round, unpaced, with the default models and a SQLite store: after the first
pass every voice and every utterance length has been heard once, so whatever still grows is
growth with meeting length. No timed assertion: the 4-hour run and the speed targets live in
``scripts/bench.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from tests._pipeline_support import components, eval_file, needs_eval

LOOP_FILES = ("sample", "test", "diarizationExample", "trn01")
MEETING_SECONDS = 600.0
WARM_UP_SECONDS = 180.0  # one pass (121 s) plus a minute
MID_SECONDS = 300.0
SAMPLE_EVERY = 5.0

# RSS slope after warm-up, MiB per hour of meeting, sampled every 5 s after a garbage collection
# and glibc's malloc_trim (memory in use rather than free pages the allocator keeps). Measured
# here (2 cores shared with other jobs, load ~7), four runs of this test: raw RSS -5.6, +31.0,
# -8.8, +0.9 MiB/h; trimmed +4.2, +25.2 MiB/h. Over a 7-minute window the RSS wanders by 3-4 MiB,
# so this loop resolves a slope to about ±30 MiB/h, not the 4-hour target's 39 MiB/h (+150 MB
# between minute 10 and hour 4: scripts/bench.py --loop-minutes checks that, docs/performance.md).
# 80 MiB/h keeps a margin over the noise and still catches any per-utterance leak of audio (about
# 530 utterances/h here, 5 s of float32 each: 160 MiB/h) or of anything the size of the meeting.
# The window history the diarizer keeps for refinement is the one thing meant to grow (at most 4
# windows of 1 KiB per second of speech: <= 14.3 MiB/h; measured 8.1 MiB/h on this loop): it is
# checked exactly below, from its arrays, not through the RSS.
RSS_SLOPE_TOLERANCE = 80.0
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
    root = Path(__file__).resolve().parents[1]
    code = f"from tests.test_long_meeting import run_meeting; run_meeting({str(tmp_path)!r})"
    child = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=1800)
    print(child.stdout)
    assert child.returncode == 0, child.stderr[-4000:]


def run_meeting(tmp: str) -> None:
    """The 10-minute meeting and its checks (AssertionError when one fails)."""
    from voicekit.perf import loop_blocks, release_free_memory, rss_mb, slope_per_hour, state_bytes
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.store import MeetingStore

    store = MeetingStore(Path(tmp) / "meeting.sqlite")
    pipe = Pipeline(PipelineOptions(), components(), store=store)
    rss: list[tuple[float, float]] = []
    raw: list[tuple[float, float]] = []
    history: list[tuple[float, float]] = []
    mid: dict = {}

    def progress(seconds: float) -> None:
        if not rss or seconds - rss[-1][0] >= SAMPLE_EVERY:
            raw.append((seconds, rss_mb()))
            release_free_memory()
            rss.append((seconds, rss_mb()))
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

    slope = slope_per_hour(rss, after=WARM_UP_SECONDS)
    # net growth: the median RSS of the last minute against that of the first minute after
    # warm-up, per hour. A least-squares slope over 7 minutes reads a transient dip as growth (a CI
    # run: 682 MiB after warm-up, 682 MiB at 10 min, slope +87.2 MiB/h); a leak moves both ends.
    after = [(t, v) for t, v in rss if t >= WARM_UP_SECONDS]
    first = float(np.median([v for t, v in after if t < after[0][0] + 60]))
    last = float(np.median([v for t, v in after if t > after[-1][0] - 60]))
    growth_per_hour = (last - first) / ((after[-1][0] - after[0][0] - 60) / 3600)
    at_warm = next(v for t, v in rss if t >= WARM_UP_SECONDS)
    growth = slope_per_hour(history)
    speakers = pipe.diarizer.speakers
    print(f"\n{len(result.turns)} turns; RSS {rss[0][1]:.0f} MiB at start, {at_warm:.0f} after warm-up, "
          f"{rss[-1][1]:.0f} at 10 min; net growth after warm-up {growth_per_hour:+.1f} MiB/h (tolerance "
          f"{RSS_SLOPE_TOLERANCE}; least-squares slope {slope:+.1f}; "
          f"without trimming {slope_per_hour(raw, after=WARM_UP_SECONDS):+.1f}); "
          f"refinement history {history[-1][1]:.2f} MiB, {growth:.1f} MiB/h; speakers {len(mid['speakers'])} "
          f"at 5 min, {len(speakers)} at 10 min; live diarizer state {mid['live']} -> "
          f"{_diarizer_live_state(pipe.diarizer)} bytes")

    # memory: flat after warm-up (within the tolerance above), in both directions
    assert abs(growth_per_hour) <= RSS_SLOPE_TOLERANCE, f"RSS grew {growth_per_hour:+.1f} MiB/h after warm-up"
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
