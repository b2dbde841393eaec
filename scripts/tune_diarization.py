#!/usr/bin/env python
"""Grid-search the online diarizer's thresholds on the evaluation files, without the acceptance
file (``sample``, the pyannote sample, is held out and never scored here).

VAD + STT run once per file and are cached (``--cache``); each grid point then replays only the
diarization. Prints pooled DER (collar 0.5, live and refined) per grid point, best first.

    python scripts/tune_diarization.py --grid known_speaker_threshold=0.9,0.91 change_threshold=0.92,0.93
    python scripts/tune_diarization.py --refine MERGE_SIMILARITY=1.01
    python scripts/tune_diarization.py --narrowband 8000     # the same files as 8 kHz telephone audio
    python scripts/tune_diarization.py --gain 0.5            # the speaker encoder fed the utterances 6 dB quieter
    python scripts/tune_diarization.py --endpointer late_hangover=0.3   # other endpointer options
    python scripts/tune_diarization.py --oracle-count        # each file given its true speaker count
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import pickle
import sys
from pathlib import Path

import numpy as np

from voicekit.audio import SAMPLE_RATE, load_audio, probe, resample
from voicekit.diarization.encoder import SpeakerEncoder
from voicekit.diarization.online import DiarizerOptions, OnlineDiarizer
from voicekit.diarization import refine as refine_module
from voicekit.diarization.refine import refine_turns
from voicekit.evaluation import load_index, load_reference, pool, refined_view, score_der, turns_to_annotation
from voicekit.sources import FileSource
from voicekit.stt import Transcriber
from voicekit.turns import extend_to_speech, words_to_turns
from voicekit.vad import Endpointer, EndpointerOptions, make_vad

HELD_OUT = {"sample"}


def narrowband_blocks(path: Path, rate: int, block_seconds: float = 0.1):
    """The recording as telephone audio: resampled to ``rate`` Hz (soxr's low-pass at its Nyquist
    frequency) and back to 16 kHz, in ``block_seconds`` blocks of ``(n,)`` float32."""
    x = resample(resample(load_audio(path), SAMPLE_RATE, rate), rate, SAMPLE_RATE)
    step = int(block_seconds * SAMPLE_RATE)
    return [x[i:i + step] for i in range(0, len(x), step)]


def transcribe_all(files, vad: str, hangover: float, cache: Path, threshold: float, max_utterance: float,
                   narrowband: int | None = None, endpointer: dict | None = None):
    default = max_utterance == EndpointerOptions().max_utterance
    extra = "".join(f"-{k}{v}" for k, v in sorted((endpointer or {}).items()))
    path = cache / (f"stt2-{vad}-{hangover}-t{threshold}{'' if default else f'-max{max_utterance}'}"
                    f"{f'-nb{narrowband}' if narrowband else ''}{extra}.pkl")
    if path.exists():
        return pickle.loads(path.read_bytes())
    stt = Transcriber()
    data = {}
    for f in files:
        ep = Endpointer(make_vad(vad), EndpointerOptions(hangover=hangover, threshold=threshold,
                                                         max_utterance=max_utterance, **(endpointer or {})))
        utts = []
        for block in narrowband_blocks(f.audio, narrowband) if narrowband else FileSource(f.audio):
            utts.extend(ep.push(block))
        utts.extend(ep.flush())
        data[f.file_id] = [(u, stt.transcribe(u.samples, u.start, speech=u.speech, frame_seconds=u.frame_seconds))
                           for u in utts]
        print(f"stt {f.file_id}: {len(utts)} utterances", file=sys.stderr)
    path.write_bytes(pickle.dumps(data))
    return data


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "eval"),
                    help="folder with index.tsv (default ../shared/eval)")
    ap.add_argument("--vad", default="silero", help="silero (default) or webrtc[:0-3]")
    ap.add_argument("--hangover", type=float, default=0.6, help="seconds of silence that end an utterance")
    ap.add_argument("--vad-threshold", type=float, default=EndpointerOptions().threshold,
                    help="speech probability threshold of the endpointer (default: the endpointer's)")
    ap.add_argument("--max-utterance", type=float, default=EndpointerOptions().max_utterance,
                    help="seconds at which the endpointer closes an utterance while speech goes on "
                         "(default: the endpointer's)")
    ap.add_argument("--endpointer", nargs="*", default=[], metavar="NAME=VALUE",
                    help="other EndpointerOptions fields, e.g. late_hangover=0.3 late_after=6")
    ap.add_argument("--narrowband", type=int, default=None, metavar="HZ",
                    help="score the files as telephone audio: resampled to HZ (e.g. 8000) and back to 16 kHz "
                         "before the VAD")
    ap.add_argument("--gain", type=float, default=1.0,
                    help="scale each utterance by this factor before the diarizer (the VAD and Whisper ran "
                         "at the recording's own level): how the speaker encoder's decisions move with level")
    ap.add_argument("--window", type=float, default=1.0, help="speaker-embedding window, seconds")
    ap.add_argument("--hop", type=float, default=0.25, help="step between embedding windows, seconds")
    ap.add_argument("--cache", default="/tmp/voicekit-tune",
                    help="where the VAD+Whisper pass of each setting is cached (overlap_experiment.py reads it)")
    ap.add_argument("--grid", nargs="*", default=[], help="name=v1,v2 … (DiarizerOptions fields)")
    ap.add_argument("--oracle-count", nargs="?", const="num", choices=("num", "max", "min-max"), default=None,
                    help="give each file its true speaker count (index.tsv) as num_speakers (num, the "
                         "default), as max_speakers (max) or as both min_speakers and max_speakers (min-max)")
    ap.add_argument("--refine", nargs="*", default=[],
                    help="NAME=value … any constant of voicekit.diarization.refine (MERGE_SIMILARITY, "
                         "MIN_LIVE_WINDOWS, MIN_NEW_WINDOWS, SNAP_WORDS, MAX_CLUSTERED…)")
    args = ap.parse_args()
    for item in args.refine:
        k, v = item.split("=")
        if not hasattr(refine_module, k):
            ap.error(f"--refine {item}: voicekit.diarization.refine has no constant {k}")
        setattr(refine_module, k, type(getattr(refine_module, k))(v))
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    files = [f for f in load_index(args.eval_dir) if f.file_id not in HELD_OUT]
    try:
        endpointer = {k: float(v) for k, v in (item.split("=", 1) for item in args.endpointer)}
        EndpointerOptions(hangover=args.hangover, threshold=args.vad_threshold,
                          max_utterance=args.max_utterance, **endpointer)
    except (TypeError, ValueError) as exc:
        ap.error(f"--endpointer: {exc}")
    data = transcribe_all(files, args.vad, args.hangover, cache, args.vad_threshold, args.max_utterance,
                          args.narrowband, endpointer)
    encoder = SpeakerEncoder(window=args.window, hop=args.hop)
    refs = {f.file_id: load_reference(f, probe(f.audio).duration) for f in files}
    names, values = [], []
    for item in args.grid:
        k, v = item.split("=")
        names.append(k)
        default = getattr(DiarizerOptions(), k)
        kind = (lambda x: x.lower() in ("1", "true", "yes")) if isinstance(default, bool) else \
            (type(default) if default is not None else (lambda x: float(x) if "." in x else int(x)))
        values.append([None if x.lower() == "none" else kind(x) for x in v.split(",")])
    rows = []
    for combo in itertools.product(*values) if values else [()]:
        opt = DiarizerOptions(**dict(zip(names, combo)))
        live, refined, exact_l, exact_r, near_l, near_r = [], [], 0, 0, 0, 0
        for f in files:
            counts = {"num": {"num_speakers": f.speakers}, "max": {"max_speakers": f.speakers},
                      "min-max": {"min_speakers": f.speakers, "max_speakers": f.speakers}}
            o = dataclasses.replace(opt, **counts[args.oracle_count]) if args.oracle_count else opt
            d = OnlineDiarizer(encoder, o)
            turns = []
            for u, words in data[f.file_id]:
                if args.gain != 1.0:
                    u = dataclasses.replace(u, samples=(u.samples * args.gain).astype(np.float32))
                ws, _ = d.process(u, words)
                turns.extend(extend_to_speech(words_to_turns(ws), u.speech_span))
            turns = [t.replace(turn_id=i) for i, t in enumerate(turns)]
            rt = refined_view(turns, refine_turns(turns, [w for _, w in d.history], max_speakers=o.speaker_cap))  # as Pipeline.refine
            ref, uem = refs[f.file_id]
            live.append(score_der(ref, turns_to_annotation(turns, f.file_id), uem, 0.5))
            refined.append(score_der(ref, turns_to_annotation(rt, f.file_id), uem, 0.5))
            exact_l += len({t.speaker for t in turns}) == f.speakers
            exact_r += len({t.speaker for t in rt}) == f.speakers
            near_l += abs(len({t.speaker for t in turns}) - f.speakers) <= 1
            near_r += abs(len({t.speaker for t in rt}) - f.speakers) <= 1
        pl, pr = pool(live), pool(refined)
        rows.append((pl.der, pr.der, dict(zip(names, combo)), exact_l, exact_r, pl, pr, near_l, near_r))
        print(f"{dict(zip(names, combo))}: live {100*pl.der:.1f} (conf {100*pl.confusion/pl.total:.1f}) "
              f"refined {100*pr.der:.1f} (conf {100*pr.confusion/pr.total:.1f}) exact {exact_l}/{exact_r} "
              f"within 1 {near_l}/{near_r}",
              file=sys.stderr)
    print(f"\nrefine {' '.join(args.refine) or 'defaults'}; window {args.window} hop {args.hop} vad {args.vad}{f' narrowband {args.narrowband} Hz' if args.narrowband else ''}{f' gain {args.gain:g}' if args.gain != 1.0 else ''} hangover {args.hangover} "
          f"max utterance {args.max_utterance}; {f'true speaker counts given ({args.oracle_count}); ' if args.oracle_count else ''}"
          f"{len(files)} files (held out: {sorted(HELD_OUT)}); DER c0.5 pooled")
    for pl_der, pr_der, combo, el, er, pl, pr, nl, nr in sorted(rows, key=lambda r: r[0] + r[1]):
        print(f"live {100*pl_der:5.1f}  refined {100*pr_der:5.1f}  exact#spk {el}/{er}  within 1 {nl}/{nr}  "
              f"miss {100*pl.missed/pl.total:.1f}  {combo}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
