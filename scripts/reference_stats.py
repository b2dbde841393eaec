#!/usr/bin/env python
"""How much a diarizer can hear of each reference speaker: per file of ``../shared/eval``, each
speaker's speech that no one else overlaps (seconds, inside the file's UEM).

A speaker embedding of a stretch shorter than the embedder's window (1.0 s here) or heard only
under another voice is unreliable evidence of a new speaker, so the number of files whose every
speaker has at least N seconds of solo speech bounds how many files a speaker count can be
exact on (issue 3's "exact on at least 9 of 19"; docs/accuracy.md).

    python scripts/reference_stats.py
    python scripts/reference_stats.py --min-solo 1 2 3
"""

from __future__ import annotations

import argparse
from pathlib import Path

from voicekit.audio import probe
from voicekit.evaluation import load_index, load_reference


def solo_seconds(reference, uem) -> dict[str, float]:
    """Seconds of each label's speech, inside ``uem``, that overlaps no other label's.

    Args:
        reference: a ``pyannote.core.Annotation``.
        uem: a ``pyannote.core.Timeline`` (the scored region).

    Returns:
        ``{label: seconds}``.
    """
    reference = reference.crop(uem)
    overlap = reference.get_overlap()
    return {label: reference.label_timeline(label).support().extrude(overlap).duration()
            for label in reference.labels()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"))
    ap.add_argument("--min-solo", type=float, nargs="+", default=[1.0, 2.0, 3.0],
                    help="seconds of solo speech per speaker to count files for (default: 1 2 3)")
    args = ap.parse_args()
    files = load_index(args.eval_dir)
    enough = dict.fromkeys(args.min_solo, 0)
    print(f"{'file':20s} {'speakers':>8s} {'least solo':>10s}  solo speech per speaker (s)")
    for f in files:
        reference, uem = load_reference(f, probe(f.audio).duration)
        solo = solo_seconds(reference, uem)
        least = min(solo.values(), default=0.0)
        for n in enough:
            enough[n] += least >= n
        print(f"{f.file_id:20s} {len(solo):8d} {least:10.1f}  " + " ".join(f"{s:.1f}" for s in sorted(solo.values())))
    for n, count in enough.items():
        print(f"files whose every speaker has ≥ {n:g} s of solo speech: {count} of {len(files)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
