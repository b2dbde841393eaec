#!/usr/bin/env python
"""What overlap handling buys with the bundled speaker encoder (GE2E, no segmentation model).

A one-label-per-frame diarizer must miss the second speaker wherever two people speak at once.
Two overlap methods that the available models allow are scored against the plain live output,
on the 18 evaluation files other than the acceptance file (pooled DER, collar 0.5) and on the
overlap-heavy files (tst00, trn08, trn09, EN2002a_30s):

- ``mixture``: a window whose embedding is closer to the normalised sum of its speaker's
  centroid and another speaker's centroid than to its own speaker's centroid (by more than
  ``margin``) is taken as two-speaker evidence: the other speaker is also active over that
  window's hop.
- ``boundary``: at each change between two speakers with less than 0.3 s between their turns,
  the earlier speaker stays active ``delta`` seconds into the next turn (interruptions and
  back-channels cluster at speaker changes).

VAD + STT come from scripts/tune_diarization.py's cache (run it once first).

    python scripts/overlap_experiment.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from pyannote.core import Annotation, Segment

sys.path.insert(0, str(Path(__file__).parent))

from tune_diarization import HELD_OUT, transcribe_all  # noqa: E402

from voicekit.audio import probe  # noqa: E402
from voicekit.diarization.encoder import SpeakerEncoder  # noqa: E402
from voicekit.diarization.online import OnlineDiarizer, _unit  # noqa: E402
from voicekit.evaluation import load_index, load_reference, pool, score_der, turns_to_annotation  # noqa: E402
from voicekit.turns import extend_to_speech, words_to_turns  # noqa: E402
from voicekit.vad import EndpointerOptions  # noqa: E402

HEAVY = ("tst00", "trn08", "trn09", "EN2002a_30s")


def mixture_overlap(hyp: Annotation, turns, windows, hop: float, margin: float) -> Annotation:
    """Add the second speaker over windows whose embedding a two-speaker mixture explains better."""
    vectors = np.vstack([w.vectors for w in windows])
    centers = np.concatenate([w.centers for w in windows])
    labels = []
    for c in centers:
        t = next((t for t in turns if t.start <= c < t.end), None)
        labels.append(t.speaker if t else None)
    speakers = sorted({x for x in labels if x})
    if len(speakers) < 2:
        return hyp
    centroid = {s: _unit(vectors[[x == s for x in labels]].mean(axis=0)) for s in speakers}
    out = hyp.copy()
    for v, c, own in zip(vectors, centers, labels):
        if own is None:
            continue
        alone = float(v @ centroid[own])
        other, mixed = max(((s, float(v @ _unit(centroid[own] + centroid[s]))) for s in speakers if s != own),
                           key=lambda x: x[1])
        if mixed > alone + margin:
            out[Segment(c - hop / 2, c + hop / 2), f"mix{c:.3f}"] = other
    return out


def boundary_overlap(hyp: Annotation, turns, delta: float) -> Annotation:
    """Keep the earlier speaker active ``delta`` seconds into the next speaker's turn."""
    out = hyp.copy()
    for a, b in zip(turns[:-1], turns[1:]):
        if a.speaker != b.speaker and b.start - a.end < 0.3:
            out[Segment(b.start, min(b.end, b.start + delta)), f"bnd{b.start:.3f}"] = a.speaker
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"),
                    help="folder with index.tsv (default ../shared/eval)")
    ap.add_argument("--cache", default="/tmp/voicekit-tune",
                    help="the VAD+Whisper cache tune_diarization.py writes (made here when missing)")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    files = [f for f in load_index(args.eval_dir) if f.file_id not in HELD_OUT]
    ep = EndpointerOptions()  # the defaults: the cache tune_diarization.py writes with its defaults
    data = transcribe_all(files, "silero", ep.hangover, cache, ep.threshold, ep.max_utterance)
    encoder = SpeakerEncoder()
    hop = encoder.hop_seconds
    runs = []
    for f in files:
        ref, uem = load_reference(f, probe(f.audio).duration)
        diarizer = OnlineDiarizer(encoder)
        turns = []
        for utt, words in data[f.file_id]:
            labelled, _ = diarizer.process(utt, words)
            turns.extend(extend_to_speech(words_to_turns(labelled), utt.speech_span))
        runs.append((f.file_id, ref, uem, turns, [w for _, w in diarizer.history]))
    methods = [("none", lambda h, t, w: h)]
    methods += [(f"mixture margin={m}", lambda h, t, w, m=m: mixture_overlap(h, t, w, hop, m)) for m in (0.0, 0.02, 0.04)]
    methods += [(f"boundary delta={d}", lambda h, t, w, d=d: boundary_overlap(h, t, d)) for d in (0.2, 0.4, 0.8)]
    print(f"{len(files)} files (held out: {sorted(HELD_OUT)}), DER % collar 0.5, live labels")
    print(f"| method | pooled DER (FA/miss/conf) | {' | '.join(HEAVY)} |")
    print("|---|---|" + "---|" * len(HEAVY))
    for name, method in methods:
        scores = {}
        for fid, ref, uem, turns, windows in runs:
            hyp = turns_to_annotation(turns, fid)
            scores[fid] = score_der(ref, method(hyp, turns, windows) if turns else hyp, uem, 0.5)
        p = pool(list(scores.values()))
        parts = "/".join(f"{100 * x / p.total:.1f}" for x in (p.false_alarm, p.missed, p.confusion))
        heavy = " | ".join(f"{100 * scores[h].der:.1f}" for h in HEAVY)
        print(f"| {name} | {100 * p.der:.1f} ({parts}) | {heavy} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
