#!/usr/bin/env python3
"""Benchmark: voiceprint identification accuracy and false accepts on the AMI eval files.

The AMI files of ``../shared/eval`` share speakers (AMI participant ids in the RTTMs): dev00 and
dev01 (MEE009, MEE012), trn00 and trn03 (MÉO069), trn06 and trn09 (FEE083), trn07 and trn08
(FEE087, MEO086, ...), tst00 and EN2002a_30s (the EN2002 group: FEO070, FEO072, MEE071, MEE073).

Each file is embedded with the SpeakerEncoder (1.0 s windows every 0.25 s, as the online
diarizer embeds an utterance); a window belongs to a reference speaker when that speaker alone
speaks in at least 80% of it (reference RTTM). Evidence seconds are counted as the diarizer
counts them (windows x 0.25 s).

Two folds: fold 1 enrols every speaker with enough speech in dev00, trn03, trn06, trn08, tst00
and identifies the speakers of dev01, trn00, trn09, trn07, EN2002a_30s; fold 2 the other way
round. Speakers found in only one file (trn04, trn05, trn09's MEE094) are enrolled from the first
half of their speech and identified in the second half ("halves", same session: easier). All
enrolled voices of a fold share one library, so every other voice competes.

Trials, at each evidence amount N: every disjoint run of N seconds of a speaker's windows\n(consecutive windows, in time order; the first run is what a live meeting sees first):
- genuine: the speaker is enrolled; correct when the best voice is theirs and >= threshold;
- impostor: the speaker is not in the library (either never enrolled, or left out of the library
  for this trial); a false accept when any voice reaches the threshold.

Prints per-trial similarities, then accuracy / false-accept rate over a threshold grid, and the
threshold that ``voicekit.voiceprints`` uses. The pyannote acceptance file is never used.

    python scripts/bench_voiceprints.py [--eval-dir ../shared/eval] [--evidence 2 4 6 10]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from voicekit.audio import load_audio  # noqa: E402
from voicekit.diarization.encoder import SpeakerEncoder  # noqa: E402
from voicekit.evaluation import EvalFile, load_index  # noqa: E402
from voicekit.voiceprints import (  # noqa: E402
    MATCH_THRESHOLD,
    MIN_ENROL_SECONDS,
    MIN_EVIDENCE_SECONDS,
    Voiceprint,
    similarities,
    voiceprint_vector,
)

FOLDS = (
    (("dev00", "trn03", "trn06", "trn08", "tst00"), ("dev01", "trn00", "trn09", "trn07", "EN2002a_30s")),
    (("dev01", "trn00", "trn09", "trn07", "EN2002a_30s"), ("dev00", "trn03", "trn06", "trn08", "tst00")),
)
HALVES = ("trn04", "trn05", "trn09")
MAX_FALSE_ACCEPT = 0.05  # the threshold is the lowest whose pooled false-accept rate is at most this
SOLO_COVER = 0.8  # share of a window in which its speaker must speak alone


def solo_frames(file: EvalFile) -> dict[str, np.ndarray]:
    """Per reference speaker, a 10 ms frame mask of where they alone speak."""
    segs: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for line in file.rttm.read_text(encoding="utf-8").splitlines():
        p = line.split()
        if len(p) >= 8 and p[0] == "SPEAKER" and p[1] == file.file_id:
            segs[p[7]].append((float(p[3]), float(p[3]) + float(p[4])))
    if not segs:
        return {}
    n = int(np.ceil(max(e for v in segs.values() for _, e in v) * 100)) + 1
    active = {spk: np.zeros(n, bool) for spk in segs}
    for spk, v in segs.items():
        for s, e in v:
            active[spk][int(s * 100):int(e * 100)] = True
    count = np.sum(list(active.values()), axis=0)
    return {spk: mask & (count == 1) for spk, mask in active.items()}


@dataclass
class SpeakerWindows:
    """One reference speaker's window embeddings in one file, in time order."""

    file_id: str
    speaker: str
    vectors: np.ndarray  # (n, 256) float32

    def seconds(self, hop: float) -> float:
        return len(self.vectors) * hop


def embed_speakers(file: EvalFile, encoder: SpeakerEncoder) -> dict[str, SpeakerWindows]:
    """Embed the whole file in windows (as the diarizer embeds an utterance) and give each
    window to the reference speaker who alone speaks in at least SOLO_COVER of it."""
    audio = load_audio(file.audio)
    emb = encoder.embed_windows(audio, 0.0)
    out = {}
    for spk, mask in solo_frames(file).items():
        keep = []
        for i, (s, e) in enumerate(zip(emb.starts, emb.ends)):
            a, b = int(round(s * 100)), int(round(e * 100))
            if b > a and mask[a:b].mean() >= SOLO_COVER:
                keep.append(i)
        if keep:
            out[spk] = SpeakerWindows(file.file_id, spk, emb.vectors[keep])
    return out


@dataclass
class Trial:
    speaker: str
    source: str          # "enrol-file -> test-file" or "halves:file"
    evidence: float      # seconds of evidence the live centroid was built from
    true_sim: float | None  # similarity to the speaker's own voiceprint (None: not in library)
    best_other: str
    best_other_sim: float


def run_trials(library: dict[str, tuple[Voiceprint, str]], tests: list[tuple[SpeakerWindows, str]],
               evidence: list[float], hop: float) -> list[Trial]:
    """Genuine trials (speaker in the library), leave-one-out impostor trials (the same speaker
    with their own voice removed) and impostor trials of speakers never enrolled."""
    trials = []
    voices = [v for v, _ in library.values()]
    for sw, source in tests:
        for ev in evidence:
            k = int(round(ev / hop))
            # disjoint chunks of k consecutive windows: the first is what a live meeting sees first
            for c in range(0, len(sw.vectors) - k + 1, k):
                centroid = voiceprint_vector(sw.vectors[c:c + k])
                sims = similarities(centroid, voices)
                others = [(s, v.name) for s, v in zip(sims, voices) if v.name != sw.speaker]
                best_sim, best_name = max(others) if others else (-1.0, "-")
                own = [s for s, v in zip(sims, voices) if v.name == sw.speaker]
                trials.append(Trial(sw.speaker, source, ev, float(own[0]) if own else None, best_name,
                                    float(best_sim)))
    return trials


def summarize(trials: list[Trial], threshold: float) -> dict[str, float]:
    genuine = [t for t in trials if t.true_sim is not None]
    correct = sum(1 for t in genuine if t.true_sim >= threshold and t.true_sim > t.best_other_sim)
    wrong = sum(1 for t in genuine if t.best_other_sim >= threshold and t.best_other_sim > t.true_sim)
    # impostor trials: every trial with the true voice left out (all trials), named when any other
    # voice reaches the threshold
    fa = sum(1 for t in trials if t.best_other_sim >= threshold)
    return {"genuine": len(genuine), "correct": correct, "wrong_name": wrong,
            "impostor": len(trials), "false_accept": fa}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"),
                    help="folder with index.tsv (default ../shared/eval)")
    ap.add_argument("--evidence", type=float, nargs="+", default=[2.0, 4.0, 6.0, 10.0],
                    help="seconds of a speaker's speech to identify from (default 2 4 6 10)")
    ap.add_argument("--min-enrol", type=float, default=MIN_ENROL_SECONDS,
                    help="seconds of speech an enrolment needs (default: voicekit's)")
    args = ap.parse_args()
    files = {f.file_id: f for f in load_index(args.eval_dir)}
    encoder = SpeakerEncoder()
    hop = encoder.hop_seconds
    needed = sorted({fid for fold in FOLDS for side in fold for fid in side} | set(HALVES))
    emb = {fid: embed_speakers(files[fid], encoder) for fid in needed}

    # halves: enrol from the first half of a speaker's windows, test on the second half
    halves_lib: dict[str, tuple[Voiceprint, str]] = {}
    halves_tests: list[tuple[SpeakerWindows, str]] = []
    # speakers heard in more than one file are identified across files, not in halves
    counts = Counter(spk for fid in needed for spk in emb[fid])
    cross = {spk for spk, c in counts.items() if c > 1}
    for fid in HALVES:
        for spk, sw in emb[fid].items():
            if spk in cross:
                continue
            half = len(sw.vectors) // 2
            if half * hop >= args.min_enrol:
                halves_lib[spk] = (Voiceprint(spk, voiceprint_vector(sw.vectors[:half]), half * hop), f"{fid}[:half]")
                halves_tests.append((SpeakerWindows(fid, spk, sw.vectors[half:]), f"halves:{fid}"))

    all_trials: list[Trial] = []
    print(f"enrolment needs >= {args.min_enrol:g} s; evidence {args.evidence} s; window hop {hop:g} s\n")
    for n, (enrol_ids, test_ids) in enumerate(FOLDS, start=1):
        library = dict(halves_lib)
        for fid in enrol_ids:
            for spk, sw in emb[fid].items():
                secs = sw.seconds(hop)
                if secs >= args.min_enrol and (spk not in library or library[spk][0].seconds < secs):
                    library[spk] = (Voiceprint(spk, voiceprint_vector(sw.vectors), secs), fid)
        tests = [(sw, f"{library[spk][1] if spk in library else '-'} -> {fid}")
                 for fid in test_ids for spk, sw in emb[fid].items()]
        if n == 1:
            tests += halves_tests
        print(f"fold {n}: library of {len(library)} voices: "
              + ", ".join(f"{k} ({v.seconds:.1f} s, {src})" for k, (v, src) in sorted(library.items())))
        trials = run_trials(library, tests, args.evidence, hop)
        for t in trials:
            own = f"{t.true_sim:.3f}" if t.true_sim is not None else "  -  "
            print(f"  {t.speaker:7s} {t.source:28s} evidence {t.evidence:4.1f} s  own {own}  "
                  f"best other {t.best_other_sim:.3f} ({t.best_other})")
        all_trials += trials
        print()

    print("threshold grid (genuine: named correctly / trials; impostor: any voice named when the "
          "speaker's own voice is not in the library)")
    for ev in args.evidence:
        tr = [t for t in all_trials if t.evidence == ev]
        print(f"\nevidence {ev:g} s: {sum(t.true_sim is not None for t in tr)} genuine, {len(tr)} impostor trials")
        print(f"  {'thr':>5} {'correct':>9} {'wrong':>6} {'false acc':>10}")
        for thr in np.arange(0.60, 0.951, 0.025):
            s = summarize(tr, float(thr))
            mark = "  <- MATCH_THRESHOLD" if abs(thr - MATCH_THRESHOLD) < 1e-6 else ""
            print(f"  {thr:5.3f} {s['correct']:4d}/{s['genuine']:<4d} {s['wrong_name']:6d} "
                  f"{s['false_accept']:4d}/{s['impostor']:<5d}{mark}")
    at = [t for t in all_trials if t.evidence >= MIN_EVIDENCE_SECONDS]
    print(f"\npooled over evidence >= {MIN_EVIDENCE_SECONDS:g} s (MIN_EVIDENCE_SECONDS)")
    suggested = None
    for thr in np.arange(0.80, 0.951, 0.0125):
        s = summarize(at, float(thr))
        rate = s["false_accept"] / max(1, s["impostor"])
        if suggested is None and rate <= MAX_FALSE_ACCEPT:
            suggested = float(thr)
        mark = "  <- MATCH_THRESHOLD" if abs(thr - MATCH_THRESHOLD) < 1e-6 else ""
        print(f"  {thr:6.4f} {s['correct']:4d}/{s['genuine']:<4d} {s['wrong_name']:4d} "
              f"{s['false_accept']:4d}/{s['impostor']:<5d}{mark}")
    print(f"lowest threshold with a pooled false-accept rate <= {MAX_FALSE_ACCEPT:.0%}: "
          + (f"{suggested:.4f}" if suggested is not None else "none"))
    s = summarize(at, MATCH_THRESHOLD)
    print(f"\nat MATCH_THRESHOLD {MATCH_THRESHOLD} and evidence >= {MIN_EVIDENCE_SECONDS:g} s: "
          f"{s['correct']}/{s['genuine']} genuine named correctly ({100 * s['correct'] / max(1, s['genuine']):.0f}%), "
          f"{s['wrong_name']} wrong names, {s['false_accept']}/{s['impostor']} impostor false accepts "
          f"({100 * s['false_accept'] / max(1, s['impostor']):.1f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
