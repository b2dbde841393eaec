#!/usr/bin/env python
"""Speed, latency and memory of the live pipeline (issue 3 targets), as one table.

Runs the real :class:`voicekit.pipeline.Pipeline` with its default options (Silero VAD, Whisper
tiny.en, the online diarizer), a SQLite meeting store and no hooks, over the recordings of
``../shared/eval`` (``index.tsv``), and prints one Markdown table: real-time factor per stage
(VAD, STT, diarization, commit) and of the whole run, turn latency p50/p95/max, peak resident
memory, and the machine (CPU, cores, load, library versions, git commit).

Three modes:

    python scripts/bench.py                       # unpaced, each eval file once (RTF)
    python scripts/bench.py --realtime            # paced 1x replay: turn latency
    python scripts/bench.py --loop-minutes 240    # one long unpaced meeting made by looping the
                                                  # eval recordings: memory and per-turn compute
                                                  # over meeting time (CSV + docs/perf/*.png)

Latency (``--realtime``) is the pipeline's own stamp: with ``realtime_clock`` a turn's
``emitted_at`` is the wall-clock time at which it is committed, in seconds from the start of
the stream, and a paced replay delivers each 0.1 s block when its last sample is due, as a
microphone does, and each recording is followed by 1.5 s of paced silence, so that its last
utterance closes by the endpointer's hangover as live speech does (not at once by the end of the
file). Two latencies are printed: **turn latency** = ``emitted_at`` - the turn's end
(its last word, widened to the VAD speech around it), so a turn that ends early in a long
utterance waits for the rest of it; and **utterance latency** = ``emitted_at`` of an utterance's
last turn - the end of its speech (last VAD speech frame), the target's "emitted ≤ 1.0 s after
its utterance ends" (it includes the endpointer's hangover). Unpaced runs stamp ``emitted_at``
from the audio clock plus compute time, so their latency rows are left out.

Memory is the process's resident set size (``VmRSS`` / ``VmHWM`` from ``/proc/self/status``),
sampled every 10 s of meeting audio. The plots need matplotlib (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from voicekit.cli import machine_line, source_commit  # noqa: E402
from voicekit.evaluation import load_index  # noqa: E402
from voicekit.perf import loop_blocks, peak_rss_mb, rss_mb, slope_per_hour, state_bytes  # noqa: E402
from voicekit.pipeline import Components, MeetingResult, Pipeline, PipelineOptions  # noqa: E402
from voicekit.sources import FileSource  # noqa: E402
from voicekit.store import MeetingStore  # noqa: E402
from voicekit.turns import SpeakerTurn  # noqa: E402
from voicekit.vad import EndpointerOptions  # noqa: E402

STAGES = ("vad", "stt", "diarization", "commit")
DEFAULT_REALTIME_FILES = ("sample", "test", "diarizationExample", "trn00", "EN2002a_30s")
RSS_EVERY = 10.0  # seconds of meeting audio between two memory samples
TRAILING_SILENCE = 1.5   # seconds after each recording in a paced run: the 0.6 s hangover and then some
BUDGET_MIB = 150e6 / 2**20   # issue 3's "+150 MB" of resident memory, in the MiB the RSS is read in


# --- diarizer state ------------------------------------------------------------------------------
def history_bytes(pipe: Pipeline) -> int:
    """Bytes of window embeddings the online diarizer keeps for offline refinement."""
    return state_bytes(pipe.diarizer.history)


def speaker_state_bytes(pipe: Pipeline) -> int:
    """Bytes of the online diarizer's per-speaker state."""
    return state_bytes(pipe.diarizer.speakers)


# --- per-utterance probe --------------------------------------------------------------------------
@dataclass
class UtteranceCost:
    """Compute spent on one utterance, read from the pipeline's stage clocks at its first turn.

    ``stt`` also holds the STT time of word-less utterances before it (they emit no turn).
    """

    start: float
    end: float
    stt: float
    diarization: float
    speakers: int
    history_mb: float


@dataclass
class Probe:
    """An ``on_turn`` sink that records per-utterance compute and, through ``progress``, memory."""

    pipe: Pipeline | None = None
    offset: float = 0.0  # meeting seconds before this pipeline's stream (unused in a loop)
    costs: list[UtteranceCost] = field(default_factory=list)
    memory: list[tuple[float, float, float]] = field(default_factory=list)  # (audio s, wall s, RSS MiB)
    _last: dict[str, float] = field(default_factory=dict)
    _next_sample: float = 0.0
    consumed: float = 0.0  # meeting seconds fed so far
    _t0: float = field(default_factory=time.monotonic)
    _history: tuple[int, int] = (0, 0)   # (entries, bytes) of the diarizer's history measured so far

    def history_mb(self) -> float:
        """The refinement history's size, adding only the entries since the last call: walking the
        whole history at every utterance (inside the pipeline's commit clock) cost 17-41 ms per
        utterance after hours, which the table then showed as the commit stage's."""
        history = self.pipe.diarizer.history
        seen, size = self._history
        if len(history) < seen:   # trimmed: measure again
            seen, size = 0, 0
        self._history = (len(history), size + state_bytes(history[seen:]))
        return self._history[1] / 2**20

    def on_turn(self, turn: SpeakerTurn) -> None:
        stages = self.pipe.stage_seconds
        stt = stages["stt"] - self._last.get("stt", 0.0)
        diar = stages["diarization"] - self._last.get("diarization", 0.0)
        self._last = dict(stages)
        if stt == 0.0 and diar == 0.0 and self.costs:  # another turn of the same utterance
            self.costs[-1].end = turn.end
            return
        self.costs.append(UtteranceCost(turn.start, turn.end, stt, diar, len(self.pipe.diarizer.speakers),
                                        self.history_mb()))

    def progress(self, seconds: float) -> None:
        self.consumed = seconds
        if seconds >= self._next_sample:
            self.memory.append((seconds, time.monotonic() - self._t0, rss_mb()))
            self._next_sample = seconds + RSS_EVERY


# --- runs -----------------------------------------------------------------------------------------
@dataclass
class Totals:
    """Sums over the runs of a benchmark."""

    audio: float = 0.0
    wall: float = 0.0
    stages: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    latencies: list[float] = field(default_factory=list)
    utterance_latencies: list[float] = field(default_factory=list)
    turns: int = 0
    overflows: int = 0
    cpu: float = 0.0  # CPU seconds of the process (all threads) while the runs went on
    thread_cpu: dict[str, float] = field(default_factory=lambda: {"vad": 0.0, "diarization": 0.0})

    def add(self, result: MeetingResult) -> None:
        self.audio += result.audio_seconds
        self.wall += result.processing_seconds
        for k in STAGES:
            self.stages[k] += result.stage_seconds.get(k, 0.0)
        self.turns += len(result.turns)


def count_thread_cpu(pipe: Pipeline, totals: Totals) -> None:
    """Add the CPU time of the process spent during VAD and during diarization to ``totals``.

    Both are called in the pipeline's thread, one at a time, and STT is idle meanwhile, so the
    process's CPU time during the call is what they cost, whatever else the machine runs: the
    pipeline thread's own (Silero with one ONNX thread, the speaker encoder with one torch
    thread) and the helper threads of NumPy's OpenBLAS (the calling thread's clock alone missed
    them: 30-40 % of diarization's CPU). STT (CTranslate2's own threads) has no such clock.
    """
    push, process = pipe.endpointer.push, pipe.diarizer.process

    def timed_push(block):
        t = time.process_time()
        out = list(push(block))
        totals.thread_cpu["vad"] += time.process_time() - t
        return out

    def timed_process(utt, words):
        t = time.process_time()
        try:
            return process(utt, words)
        finally:
            totals.thread_cpu["diarization"] += time.process_time() - t

    pipe.endpointer.push = timed_push
    pipe.diarizer.process = timed_process


def with_trailing_silence(source: Iterable[np.ndarray], seconds: float, block: float = 0.1
                          ) -> Iterator[np.ndarray]:
    """The paced ``source``'s blocks, then ``seconds`` of silence in blocks of ``block`` seconds,
    each delivered when its last sample is due (as :class:`FileSource` paces the recording)."""
    yield from source
    t0, n = time.monotonic(), int(round(seconds / block))
    for i in range(n):
        delay = t0 + (i + 1) * block - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        yield np.zeros(int(round(block * 16000)), np.float32)


def run_one(components: Components, options: PipelineOptions, source, store_dir: Path, name: str,
            totals: Totals, realtime: bool = False) -> MeetingResult:
    """One meeting through a fresh pipeline with a SQLite store in ``store_dir``."""
    store = MeetingStore(store_dir / f"{name}.sqlite")
    try:
        pipe = Pipeline(options, components, store=store, realtime_clock=realtime)
        count_thread_cpu(pipe, totals)
        return pipe.run(source)
    finally:
        store.close()


def versions() -> str:
    import ctranslate2
    import faster_whisper
    import onnxruntime
    import torch

    return (f"Python {platform.python_version()}, torch {torch.__version__} ({torch.get_num_threads()} "
            f"threads), ctranslate2 {ctranslate2.__version__}, faster-whisper {faster_whisper.__version__}, "
            f"onnxruntime {onnxruntime.__version__}, numpy {np.__version__}")


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


# --- report ---------------------------------------------------------------------------------------
def table(mode: str, totals: Totals, load: tuple[float, float], extra: list[tuple[str, str, str]],
          commit: str) -> str:
    def rtf(seconds: float) -> str:
        return f"{seconds / totals.audio:.4f}" if totals.audio else "-"

    def verdict(value: float, target: float) -> str:
        return "met" if value <= target else "**not met**"

    whole = totals.wall / totals.audio if totals.audio else float("nan")
    diar = totals.stages["diarization"] / totals.audio if totals.audio else float("nan")
    rows = [("mode", mode, ""),
            ("audio", f"{totals.audio:.1f} s, {totals.turns} turns", "")]
    for k in STAGES:
        target = ""
        if k == "diarization":
            target = f"≤ 0.03: {verdict(diar, 0.03)}"
        rows.append((f"RTF {k}", rtf(totals.stages[k]), target))
    whole_target = "≤ 0.25 unpaced: " + verdict(whole, 0.25) if "unpaced" in mode else "(paced: ≈ 1 by design)"
    rows.append(("RTF whole (wall clock)", f"{whole:.4f}", whole_target))
    rows.append(("CPU seconds per audio second (all threads)", rtf(totals.cpu),
                 "wall/CPU > 1: the cores were shared" if "unpaced" in mode and totals.wall > 1.2 * totals.cpu
                 else ""))   # (a paced run waits for the audio: its wall clock is the audio's length)
    for k, v in totals.thread_cpu.items():
        cpu_rtf = v / totals.audio if totals.audio else float("nan")
        rows.append((f"CPU seconds per audio second: {k} (the process, during the call)", f"{cpu_rtf:.4f}",
                     f"≤ 0.03: {verdict(cpu_rtf, 0.03)}" if k == "diarization" else ""))
    if totals.latencies:
        lat = totals.latencies
        p95 = percentile(lat, 95)
        rows.append(("turn latency p50 / p95 / max (from the turn's last word)",
                     f"{percentile(lat, 50):.2f} / {p95:.2f} / {max(lat):.2f} s ({len(lat)} turns)", ""))
        ulat = totals.utterance_latencies
        u95 = percentile(ulat, 95)
        rows.append(("utterance latency p50 / p95 / max (from the end of its speech)",
                     f"{percentile(ulat, 50):.2f} / {u95:.2f} / {max(ulat):.2f} s ({len(ulat)} utterances)",
                     f"p95 ≤ 1.0 s: {verdict(u95, 1.0)}"))
        rows.append(("audio blocks dropped (queue full)", str(totals.overflows), ""))
    else:
        rows.append(("turn latency", "not measured (unpaced; use --realtime)", ""))
    rows.extend(extra)
    rows.append(("peak RSS (VmHWM)", f"{peak_rss_mb():.0f} MiB", ""))
    rows.append(("machine", machine_line().removeprefix("machine: "), ""))
    rows.append(("load average (start → end)", f"{load[0]:.2f} → {load[1]:.2f}", ""))
    rows.append(("versions", versions(), ""))
    rows.append(("commit (at the start)", commit, ""))
    lines = ["| measure | value | target |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def write_loop_outputs(probe: Probe, out: Path) -> list[Path]:
    """CSV files and the two plots of a loop run."""
    out.mkdir(parents=True, exist_ok=True)
    mem_csv, turn_csv = out / "memory.csv", out / "per_turn.csv"
    with open(mem_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["meeting_seconds", "wall_seconds", "rss_mib"])
        w.writerows((f"{a:.1f}", f"{b:.1f}", f"{r:.1f}") for a, b, r in probe.memory)
    with open(turn_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["start", "end", "stt_ms", "diarization_ms", "speakers", "history_mib"])
        w.writerows((f"{c.start:.2f}", f"{c.end:.2f}", f"{1000 * c.stt:.1f}", f"{1000 * c.diarization:.1f}",
                     c.speakers, f"{c.history_mb:.2f}") for c in probe.costs)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mem = np.array(probe.memory)
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(mem[:, 0] / 60, mem[:, 2], lw=1.2, label="RSS")
    at10 = mem[np.argmin(np.abs(mem[:, 0] - 600)), 2] if mem[-1, 0] >= 600 else None
    if at10 is not None:
        ax.axhline(at10 + BUDGET_MIB, color="tab:red", ls="--", lw=1, label="budget: RSS at 10 min + 150 MB")
        ax.axvline(10, color="grey", ls=":", lw=1)
    ax.set_xlabel("meeting time (min)")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_title("voicekit live pipeline: resident memory over a looped meeting")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "memory.png", dpi=110)
    plt.close(fig)

    t = np.array([c.start for c in probe.costs]) / 60
    diar = np.array([1000 * c.diarization for c in probe.costs])
    dur = np.array([max(c.end - c.start, 0.1) for c in probe.costs])
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    a1.scatter(t, diar, s=4, alpha=0.35, label="one utterance")
    k = max(1, len(diar) // 40)
    if len(diar) >= k:
        centres = [np.median(t[i:i + k]) for i in range(0, len(t) - k + 1, k)]
        medians = [np.median(diar[i:i + k]) for i in range(0, len(t) - k + 1, k)]
        per_s = [np.median(diar[i:i + k] / dur[i:i + k]) for i in range(0, len(t) - k + 1, k)]
        a1.plot(centres, medians, color="tab:red", lw=1.5, label=f"median of {k} utterances")
        a1.plot(centres, per_s, color="tab:green", lw=1.5, label="median ms per second of turn")
    a1.set_ylabel("diarization compute (ms)")
    a1.set_yscale("log")
    a1.legend(loc="upper left", fontsize=8)
    a1.grid(alpha=0.3)
    a1.set_title("per-utterance diarization compute and diarizer state over meeting time")
    a2.plot(t, [c.speakers for c in probe.costs], color="tab:purple", label="speakers opened")
    a2.set_ylabel("speakers")
    a3 = a2.twinx()
    a3.plot(t, [c.history_mb for c in probe.costs], color="tab:orange", label="refinement history (MiB)")
    a3.set_ylabel("history (MiB)")
    a2.set_xlabel("meeting time (min)")
    lines = a2.get_lines() + a3.get_lines()
    a2.legend(lines, [ln.get_label() for ln in lines], loc="upper left", fontsize=8)
    a2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "per_turn.png", dpi=110)
    plt.close(fig)
    return [mem_csv, turn_csv, out / "memory.png", out / "per_turn.png"]


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--eval-dir", default=str(ROOT.parent / "shared" / "eval"),
                   help="folder with index.tsv (default ../shared/eval)")
    p.add_argument("--files", nargs="+", metavar="ID", help="file ids (default: all; --realtime: "
                   f"{' '.join(DEFAULT_REALTIME_FILES)})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--realtime", action="store_true", help="paced 1x replay: measure turn latency")
    mode.add_argument("--loop-minutes", type=float, metavar="N",
                      help="one unpaced meeting of N minutes made by looping the recordings")
    p.add_argument("--endpointer", nargs="*", default=[], metavar="NAME=VALUE",
                   help="EndpointerOptions fields other than the defaults, e.g. late_hangover=0.3")
    p.add_argument("--out", default=str(ROOT / "docs" / "perf"),
                   help="where a loop run writes memory.csv, per_turn.csv and the plots (default docs/perf)")
    args = p.parse_args(argv)
    # a background run ignores SIGINT unless told otherwise: both signals stop a loop early and
    # still print the table and write the plots for the meeting so far
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)

    if args.loop_minutes:
        try:   # the plots come at the end of a run of hours: check now, not then
            import matplotlib  # noqa: F401
        except ImportError:
            p.error("--loop-minutes plots memory and per-turn compute with matplotlib, which is not installed: "
                    "pip install -e '.[bench]'")
    files = load_index(args.eval_dir)
    wanted = args.files or (DEFAULT_REALTIME_FILES if args.realtime else None)
    if wanted:
        unknown = set(wanted) - {f.file_id for f in files}
        if unknown:
            p.error(f"unknown file ids {sorted(unknown)}; known: {', '.join(f.file_id for f in files)}")
        files = [f for f in files if f.file_id in wanted]

    try:
        endpointer = EndpointerOptions(**{k: float(v) for k, v in (item.split("=", 1) for item in args.endpointer)})
    except (TypeError, ValueError) as exc:
        p.error(f"--endpointer: {exc}")
    options = PipelineOptions(endpointer=endpointer)
    print("loading models…", file=sys.stderr)
    components = Components.load(options)
    load0 = os.getloadavg()[0]
    commit = source_commit()
    cpu0 = time.process_time()
    totals = Totals()
    extra: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="voicekit-bench-") as tmp:
        if args.loop_minutes:
            seconds = args.loop_minutes * 60
            probe = Probe()
            start = time.monotonic()

            def progress(s: float, _next=[0.0]) -> None:  # noqa: B006 - a counter
                probe.progress(s)
                if s >= _next[0]:
                    el = time.monotonic() - start
                    eta = el / s * (seconds - s) if s else float("nan")
                    print(f"  {s / 60:6.1f} / {seconds / 60:.0f} min of audio, RSS {rss_mb():.0f} MiB, "
                          f"{el / 60:.1f} min elapsed, ETA {eta / 60:.1f} min", file=sys.stderr, flush=True)
                    _next[0] = s + 300

            store = MeetingStore(Path(tmp) / "loop.sqlite")
            stopped = False
            try:
                pipe = Pipeline(options, components, store=store, on_turn=probe.on_turn)
                probe.pipe = pipe
                count_thread_cpu(pipe, totals)
                result = pipe.run(loop_blocks([f.audio for f in files], seconds), progress=progress)
            except KeyboardInterrupt:  # Ctrl-C / SIGTERM: report the meeting heard so far
                stopped = True
                result = MeetingResult(pipe.turns, None, probe.consumed, pipe.endpointer.speech_seconds,
                                       time.monotonic() - start, dict(pipe.stage_seconds), pipe.blocked)
            finally:
                store.close()
            totals.add(result)
            mode_name = (f"unpaced loop of {args.loop_minutes:g} min over {len(files)} recordings, in order, "
                         "repeated until the time is up")
            if stopped:
                mode_name += f", stopped after {result.audio_seconds / 60:.1f} min"
            rss10 = next((r for a, _, r in probe.memory if a >= 600), None)
            rss_end = probe.memory[-1][2]
            if rss10 is not None:
                growth = rss_end - rss10
                extra.append(("RSS at 10 min → end", f"{rss10:.0f} → {rss_end:.0f} MiB ({growth:+.0f} MiB)",
                              f"≤ +150 MB (143 MiB) over 4 h: {'met' if growth <= BUDGET_MIB else '**not met**'}"
                              + ("" if result.audio_seconds >= 4 * 3600 else f" (run: {result.audio_seconds / 60:.0f} min)")))
                extra.append(("RSS slope after 10 min", f"{slope_per_hour([(a, r) for a, _, r in probe.memory], 600):+.1f} MiB per hour",
                              "≈ 0"))
            diar = np.array([c.diarization for c in probe.costs])
            if len(diar) >= 10:
                q = len(diar) // 4
                extra.append(("diarization per utterance, median first → last quarter",
                              f"{1000 * np.median(diar[:q]):.1f} → {1000 * np.median(diar[-q:]):.1f} ms", "flat"))
            extra.append(("diarizer state at the end",
                          f"{len(pipe.diarizer.speakers)} speakers, {speaker_state_bytes(pipe) / 1024:.0f} KiB of "
                          f"per-speaker state; refinement history {history_bytes(pipe) / 2**20:.1f} MiB "
                          f"({sum(len(e) for _, e in pipe.diarizer.history)} windows)", ""))
            totals.cpu = time.process_time() - cpu0   # before the plots, which are no meeting's compute
            written = write_loop_outputs(probe, Path(args.out))
            extra.append(("written", ", ".join(str(w.relative_to(ROOT) if w.is_relative_to(ROOT) else w)
                                                for w in written), ""))
        else:
            for f in files:
                print(f"  {f.file_id}…", file=sys.stderr, flush=True)
                source = FileSource(f.audio, realtime=args.realtime)
                # paced: the recording, then silence as a live meeting has after its last words, so that
                # its last utterance closes by the hangover (the end of the file closed it at once: 5 of
                # the 25 utterances of the default files, flattered by up to 0.6 s)
                blocks = with_trailing_silence(source, TRAILING_SILENCE) if args.realtime else source
                result = run_one(components, options, blocks, Path(tmp), f.file_id, totals, realtime=args.realtime)
                totals.add(result)
                if args.realtime:
                    totals.latencies.extend(result.latencies)
                    totals.utterance_latencies.extend(result.utterance_latencies)
                    totals.overflows += source.feed.overflows if source.feed else 0
            mode_name = (f"{'paced 1x (--realtime)' if args.realtime else 'unpaced'}, "
                         f"{len(files)} recordings, one pipeline each")
    totals.cpu = totals.cpu or time.process_time() - cpu0
    if args.endpointer:
        mode_name += f"; endpointer {' '.join(args.endpointer)}"
    print(table(mode_name, totals, (load0, os.getloadavg()[0]), extra, commit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
