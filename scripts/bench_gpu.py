#!/usr/bin/env python
"""Speed of voicekit's torch models on ``--device cpu`` or ``cuda`` per compute type (issue 9).

Three sections, each timed per compute type (``float32``; on CUDA also ``float16`` and
``bfloat16``, which :func:`voicekit.devices.torch_precision` runs under ``torch.autocast``; on CPU
the torch models always run in float32, so only ``float32`` is measured there):

* ``encoder``: the GE2E speaker encoder (:class:`voicekit.diarization.encoder.SpeakerEncoder`) on
  a meeting made by concatenating (and repeating) real recordings of the eval folder:
  ``embed_windows`` on the whole meeting as one batch (mel spectrogram on the CPU included),
  ``embed_batch`` on the same mel windows (the model alone), and ``embed_windows`` on 4 s
  utterances one after another, as the live pipeline calls it;
* ``models``: pyannote's segmentation model (PyanNet, the size of ``pyannote/segmentation-3.0``)
  and embedding model (WeSpeaker ResNet34, community-1's), randomly initialised
  (:mod:`voicekit.diarization.pyannote_checkpoints`) and loaded through
  :class:`voicekit.diarization.pyannote_backend.PyannoteModels`, on batches of 10 s chunks of the
  meeting;
* ``plumbing``: voicekit's pyannote offline mode (the whole pyannote pipeline,
  :meth:`PyannoteModels.diarize`) and streaming mode (:class:`PyannoteStreamingDiarizer` on the
  utterances of voicekit's WebRTC endpointer, no words) on one real recording. Random weights give
  diffuse activations, so streaming uses low thresholds (as ``tests/test_pyannote_backend.py``)
  to make every stage run; the timings are plumbing, not accuracy.

Whisper (faster-whisper/CTranslate2) is not measured here: ``scripts/bench.py`` measures it.

Each row: median wall time of 5 runs after 2 warm-ups (plumbing: 3 after 1; ``--quick``: 2 after 1,
plumbing 1 without warm-up), with ``torch.cuda.synchronize`` around each run on CUDA; items per
second; RTF (compute seconds per second of audio; lower is faster); peak GPU memory; and on CUDA a
check against CPU float32 outputs (minimum cosine of embeddings, largest activation difference).
The machine (GPU name, CPU, versions) is printed with the table and written with the rows as JSON
to ``--json``.

    python scripts/bench_gpu.py --device cpu --quick                # well under a minute here
    python scripts/bench_gpu.py --device cuda --json gpu-bench.json
    python scripts/bench_gpu.py --device cpu --threads 16 --quick   # a CPU baseline

Needs pyannote.audio (docs/pyannote.md) for ``models`` and ``plumbing``; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from voicekit.audio import SAMPLE_RATE, load_audio  # noqa: E402
from voicekit.cli import machine_line  # noqa: E402
from voicekit.devices import DeviceError, require_torch_device  # noqa: E402
from voicekit.evaluation import load_index  # noqa: E402

DEFAULT_EVAL = Path(os.environ.get("VOICEKIT_EVAL_DIR", ROOT.parent / "shared" / "eval"))
MEETING_FILES = ("EN2002a_30s", "diarizationExample", "diarizationExample2", "test")
"""Eval ids concatenated (and repeated) into the meeting; each a 16 kHz mono WAV (112 s together)."""
PLUMBING_FILE = "diarizationExample"
"""The recording of the ``plumbing`` section (42 s, 4 speakers)."""
SECTIONS = ("encoder", "models", "plumbing")
CHUNK = 10.0  # s: pyannote's segmentation chunk (segmentation-3.0)
UTTERANCE = 4.0  # s: utterance length for the live-style encoder rows


@dataclass
class Row:
    """One measurement. Times in seconds; ``rtf`` = median / ``audio_s``; ``peak_gpu_mib`` is None on CPU."""

    section: str
    what: str
    compute_type: str
    batch: int
    items: int
    audio_s: float
    median_s: float
    min_s: float
    items_per_s: float
    rtf: float
    peak_gpu_mib: float | None
    note: str = ""


@dataclass(frozen=True)
class Sizes:
    """How much work each section does (``--quick`` shrinks it)."""

    meeting_s: float
    chunk_batch: int
    warmup: int
    repeats: int
    utterances: int
    plumbing_s: float | None  # None: the whole recording
    plumbing_warmup: int
    plumbing_repeats: int


FULL = Sizes(meeting_s=600.0, chunk_batch=32, warmup=2, repeats=5, utterances=30, plumbing_s=None,
             plumbing_warmup=1, plumbing_repeats=3)
QUICK = Sizes(meeting_s=30.0, chunk_batch=1, warmup=1, repeats=2, utterances=3, plumbing_s=3.0,
              plumbing_warmup=0, plumbing_repeats=1)


class Timer:
    """Times a callable on one device: synchronises CUDA around every run, tracks peak GPU memory."""

    def __init__(self, device: str, warmup: int, repeats: int) -> None:
        import torch

        self.torch = torch
        self.cuda = device == "cuda"
        self.warmup, self.repeats = warmup, repeats

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def __call__(self, fn: Callable[[], object], warmup: int | None = None,
                 repeats: int | None = None) -> tuple[list[float], float | None]:
        """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed.

        Returns:
            the wall times in seconds, and the peak GPU memory in MiB of the timed runs (None on CPU).
        """
        for _ in range(self.warmup if warmup is None else warmup):
            fn()
        self.sync()
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(self.repeats if repeats is None else repeats):
            self.sync()
            t0 = time.perf_counter()
            fn()
            self.sync()
            times.append(time.perf_counter() - t0)
        peak = self.torch.cuda.max_memory_allocated() / 2**20 if self.cuda else None
        return times, peak


def row(section: str, what: str, compute_type: str, batch: int, items: int, audio_s: float,
        timing: tuple[list[float], float | None], note: str = "") -> Row:
    times, peak = timing
    med = statistics.median(times)
    return Row(section, what, compute_type, batch, items, round(audio_s, 2), med, min(times),
               items / med if med > 0 else float("inf"), med / audio_s, peak, note)


# --- audio -------------------------------------------------------------------------------------------
def load_recordings(eval_dir: Path, ids: tuple[str, ...]) -> dict[str, np.ndarray]:
    """``{file_id: (n,) float32 16 kHz}`` of eval recordings, read with :func:`voicekit.audio.load_audio`.

    Raises:
        SystemExit: an id that ``<eval_dir>/index.tsv`` lacks (the message names the folder).
    """
    files = {f.file_id: f for f in load_index(eval_dir)}
    missing = [i for i in ids if i not in files]
    if missing:
        raise SystemExit(f"{eval_dir}/index.tsv has no {', '.join(missing)}: point --eval-dir at ../shared/eval "
                         "(or the copy scripts/device/prepare_wheels.sh makes in .whl/eval)")
    return {i: load_audio(files[i].audio) for i in ids}


def copy_eval(eval_dir: Path, ids: tuple[str, ...], dest: Path) -> int:
    """Copy the rows ``ids`` of ``<eval_dir>/index.tsv`` and their files (same relative paths) to
    ``dest``, for a machine that has no ``../shared/eval`` (the device machine). Returns bytes copied."""
    import csv
    import shutil

    with open(eval_dir / "index.tsv", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        fields, rows = reader.fieldnames, [r for r in reader if r["file_id"] in ids]
    missing = set(ids) - {r["file_id"] for r in rows}
    if missing:
        raise SystemExit(f"{eval_dir}/index.tsv has no {', '.join(sorted(missing))}: point --eval-dir at ../shared/eval")
    total = 0
    for r in rows:
        for key in ("audio", "rttm", "uem", "transcript"):
            if r[key].strip() in ("", "-"):
                continue
            target = dest / r[key]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(eval_dir / r[key], target)
            total += target.stat().st_size
    with open(dest / "index.tsv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return total


def meeting(recordings: dict[str, np.ndarray], seconds: float) -> np.ndarray:
    """The recordings concatenated, repeated until ``seconds`` long, cut there: ``(n,)`` float32 16 kHz."""
    one = np.concatenate(list(recordings.values()))
    n = int(seconds * SAMPLE_RATE)
    return np.tile(one, -(-n // len(one)))[:n].astype(np.float32)


# --- sections ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reference:
    """CPU float32 outputs that the CUDA rows are compared with (the ``check`` notes).

    Attributes:
        mels: ``(n, frames, 40)`` float32 mel windows of the meeting's start.
        encoder: ``(n, 256)`` float32, their GE2E embeddings.
        chunks: ``(k, 160000)`` float32, 10 s chunks of the meeting's start.
        segment: ``(k, frames, 3)`` float32 PyanNet activations of the chunks (None: no pyannote).
        embed: ``(k, 256)`` float32 ResNet34 embeddings of the chunks, all frames weighted 1.
    """

    mels: np.ndarray
    encoder: np.ndarray
    chunks: np.ndarray
    segment: np.ndarray | None
    embed: np.ndarray | None


def meeting_windows(enc, audio: np.ndarray) -> np.ndarray:
    """``(n, frames, 40)`` float32: the encoder's mel windows over ``audio`` (its window and hop)."""
    mel = enc.mel(enc.normalize_volume(audio))
    w, h = enc.window_frames, enc.hop_frames
    return np.stack([mel[s:s + w] for s in range(0, len(mel) - w + 1, h)])


def chunk_batch(audio: np.ndarray, k: int) -> np.ndarray:
    """``(k, 160000)`` float32: the first ``k`` consecutive 10 s chunks of ``audio`` (fewer if it is shorter)."""
    n = int(CHUNK * SAMPLE_RATE)
    k = min(k, len(audio) // n)
    return audio[:k * n].reshape(k, n)


def reference(audio: np.ndarray, pipeline_dir: Path | None) -> Reference:
    """Outputs of the encoder and pyannote's models on the CPU in float32 (torch's default threads)."""
    from voicekit.diarization.encoder import SpeakerEncoder

    enc = SpeakerEncoder(device="cpu", threads=0)
    mels = meeting_windows(enc, audio[:int(30 * SAMPLE_RATE)])[:64]
    chunks = chunk_batch(audio, 4)
    seg = emb = None
    if pipeline_dir is not None:
        models = load_models(pipeline_dir, "cpu", "float32", 0)
        seg = models.segment(chunks)
        emb = models.embed(chunks, np.ones(seg.shape[:2], np.float32))
    return Reference(mels, enc.embed_batch(mels), chunks, seg, emb)


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Smallest cosine similarity between matching rows of ``a`` and ``b`` (``(n, d)`` each)."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float(np.min(np.sum(a * b, axis=1)))


def bench_encoder(device: str, compute_type: str, audio: np.ndarray, sizes: Sizes, timer: Timer,
                  threads: int, ref: Reference | None) -> list[Row]:
    """GE2E on the whole meeting (one batch, with and without the mel) and on 4 s utterances."""
    from voicekit.diarization.encoder import SpeakerEncoder

    enc = SpeakerEncoder(device=device, threads=threads, compute_type=compute_type)
    check = "" if ref is None else f"check: min cosine vs CPU float32 {min_cosine(enc.embed_batch(ref.mels), ref.encoder):.5f}"
    dur = len(audio) / SAMPLE_RATE
    n_windows = len(enc.embed_windows(audio))
    out = [row("encoder", f"GE2E embed_windows, {dur:.0f} s meeting as one batch (mel on CPU included)",
               compute_type, n_windows, n_windows, dur, timer(lambda: enc.embed_windows(audio)))]
    batch = meeting_windows(enc, audio)
    out.append(row("encoder", f"GE2E embed_batch, the meeting's {len(batch)} mel windows (model only)",
                   compute_type, len(batch), len(batch), dur, timer(lambda: enc.embed_batch(batch)), check))
    step = int(UTTERANCE * SAMPLE_RATE)
    utts = [audio[i * step:(i + 1) * step] for i in range(min(sizes.utterances, len(audio) // step))]
    per_utt = len(enc.embed_windows(utts[0]))
    out.append(row("encoder", f"GE2E embed_windows, {len(utts)} utterances of {UTTERANCE:.0f} s one by one (live)",
                   compute_type, per_utt, per_utt * len(utts), UTTERANCE * len(utts),
                   timer(lambda: [enc.embed_windows(u) for u in utts])))
    return out


def random_pipeline(root: Path) -> Path:
    """A pyannote pipeline of community-1's architectures with random weights (full-size models)."""
    import torch
    from pyannote.audio.models.embedding import WeSpeakerResNet34

    from voicekit.diarization.pyannote_checkpoints import write_random_pipeline

    torch.manual_seed(2)
    return write_random_pipeline(root, WeSpeakerResNet34(), segmentation="full")


def load_models(pipeline_dir: Path, device: str, compute_type: str, threads: int):
    from voicekit.diarization.pyannote_backend import PyannoteModels

    return PyannoteModels(str(pipeline_dir), device=device, compute_type=compute_type, threads=threads)


def bench_models(models, compute_type: str, audio: np.ndarray, sizes: Sizes, timer: Timer,
                 ref: Reference | None) -> list[Row]:
    """PyanNet and WeSpeaker ResNet34 on one batch of consecutive 10 s chunks of the meeting."""
    chunks = chunk_batch(audio, sizes.chunk_batch)
    k = len(chunks)
    act = models.segment(chunks)
    seg = sum(p.numel() for p in models.segmentation_model.parameters())
    emb = sum(p.numel() for p in models.embedding.model_.parameters())
    weights = np.ones((k, act.shape[1]), np.float32)
    seg_check = emb_check = ""
    if ref is not None and ref.segment is not None:
        diff = np.abs(models.segment(ref.chunks) - ref.segment).max()
        seg_check = f"check: max |activation - CPU float32| {diff:.4f}"
        got = models.embed(ref.chunks, np.ones(ref.segment.shape[:2], np.float32))
        emb_check = f"check: min cosine vs CPU float32 {min_cosine(got, ref.embed):.5f}"
    return [row("models", f"PyanNet segment (segmentation-3.0 size, {seg / 1e6:.2f} M params), {CHUNK:.0f} s chunks",
                compute_type, k, k, k * CHUNK, timer(lambda: models.segment(chunks)), seg_check),
            row("models", f"WeSpeaker ResNet34 embed ({emb / 1e6:.2f} M params), {CHUNK:.0f} s chunks",
                compute_type, k, k, k * CHUNK, timer(lambda: models.embed(chunks, weights)), emb_check)]


def bench_plumbing(models, compute_type: str, audio: np.ndarray, name: str, sizes: Sizes, timer: Timer) -> list[Row]:
    """voicekit's pyannote offline and streaming modes on one recording."""
    from voicekit.diarization.online import DiarizerOptions
    from voicekit.diarization.pyannote_backend import PyannoteOptions, PyannoteStreamingDiarizer
    from voicekit.vad import Endpointer, make_vad

    dur = len(audio) / SAMPLE_RATE
    segments: list = []
    timing = timer(lambda: segments.__setitem__(slice(None), models.diarize(audio)), warmup=sizes.plumbing_warmup,
                   repeats=sizes.plumbing_repeats)
    out = [row("plumbing", f"pyannote offline (whole pipeline) on {name}, {dur:.0f} s", compute_type, 1, 1, dur,
               timing, f"{len(segments)} turns, {len({s.label for s in segments})} speakers (random weights)")]
    ep = Endpointer(make_vad("webrtc"))
    utts = list(ep.push(audio)) + list(ep.flush())
    options = PyannoteOptions(source="random", mode="streaming", tau_active=0.1, rho_update=0.1, onset=0.2)
    state: dict = {}
    embedded = [0]
    embed = models.embed

    def counting_embed(chunks, weights):
        embedded[0] += len(chunks)
        return embed(chunks, weights)

    def stream() -> None:
        d = PyannoteStreamingDiarizer(models, options, DiarizerOptions(max_speakers=4))
        embedded[0] = 0
        for u in utts:
            d.process(u, [])
        state["d"] = d

    models.embed = counting_embed
    try:
        timing = timer(stream, warmup=sizes.plumbing_warmup, repeats=sizes.plumbing_repeats)
    finally:
        del models.embed
    d = state["d"]
    out.append(row("plumbing", f"pyannote streaming (5 s windows / 0.5 s) on {name}, {len(utts)} WebRTC-VAD utterances",
                   compute_type, 1, len(d.window_ends), dur, timing,
                   f"{len(d.window_ends)} windows, {embedded[0]} embeddings, {len(d.centroids)} centroids"))
    return out


# --- machine and output --------------------------------------------------------------------------------
def machine(device: str, threads: int) -> dict:
    """What the numbers ran on: CPU, GPU, library versions, git commit."""
    import torch

    info: dict = {"machine": machine_line().removeprefix("machine: "), "device": device, "torch": torch.__version__,
                  "torch_cuda": torch.version.cuda, "torch_threads": torch.get_num_threads(),
                  "threads_option": threads, "python": platform.python_version()}
    for mod in ("torchaudio", "numpy", "pyannote.audio", "lightning"):
        try:
            info[mod] = __import__(mod, fromlist=["__version__"]).__version__
        except Exception as exc:  # noqa: BLE001 - a missing optional package is reported, not fatal
            info[mod] = f"absent ({type(exc).__name__})"
    try:
        from importlib.metadata import version

        info["resemblyzer"] = version("resemblyzer")
    except Exception:  # noqa: BLE001
        info["resemblyzer"] = "absent"
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=torch.cuda.get_device_name(0), gpu_memory_gib=round(props.total_memory / 2**30, 1),
                    gpu_capability=f"{props.major}.{props.minor}", gpu_multiprocessors=props.multi_processor_count,
                    cudnn=torch.backends.cudnn.version(),
                    tf32_matmul=torch.backends.cuda.matmul.allow_tf32, tf32_cudnn=torch.backends.cudnn.allow_tf32)
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True, timeout=5).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        info["commit"] = "unknown"
    return info


def table(rows: list[Row]) -> str:
    lines = ["| section | what | compute type | batch | items | audio s | median s | min s | items/s | RTF | "
             "peak GPU MiB | note |", "|" + "---|" * 12]
    for r in rows:
        peak = "-" if r.peak_gpu_mib is None else f"{r.peak_gpu_mib:.0f}"
        lines.append(f"| {r.section} | {r.what} | {r.compute_type} | {r.batch} | {r.items} | {r.audio_s:.1f} | "
                     f"{r.median_s:.4f} | {r.min_s:.4f} | {r.items_per_s:.1f} | {r.rtf:.5f} | {peak} | {r.note} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the models run")
    p.add_argument("--compute-types", default=None,
                   help="comma-separated (default: float32 on cpu; float32,float16,bfloat16 on cuda)")
    p.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    p.add_argument("--quick", action="store_true",
                   help="30 s meeting, batches of one chunk, 3 s of plumbing, 1 warm-up, 2 repeats")
    p.add_argument("--meeting-minutes", type=float, help="override the meeting length (10, or 0.5 with --quick)")
    p.add_argument("--chunk-batch", type=int, help="override the 10 s chunks per batch (32, or 1 with --quick)")
    p.add_argument("--plumbing-seconds", type=float,
                   help=f"override the seconds of {PLUMBING_FILE} for plumbing (all 42, or 3 with --quick)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads on cpu (voicekit's default 1; 0 = torch's default)")
    p.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL, help=f"folder with index.tsv (default {DEFAULT_EVAL})")
    p.add_argument("--json", type=Path, help="also write the machine and rows here as JSON")
    p.add_argument("--copy-eval-to", type=Path, metavar="DIR",
                   help="only copy the recordings this benchmark reads (and their index rows) from --eval-dir to DIR")
    args = p.parse_args(argv)
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    bad = [s for s in args.sections if s not in SECTIONS]
    if bad:
        p.error(f"unknown section(s) {', '.join(bad)}: use {', '.join(SECTIONS)}")
    default = "float32,float16,bfloat16" if args.device == "cuda" else "float32"
    args.compute_types = [c.strip() for c in (args.compute_types or default).split(",") if c.strip()]
    if args.device == "cpu" and args.compute_types != ["float32"]:
        p.error("on cpu the torch models always run in float32 (voicekit/devices.py): drop --compute-types")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ids = tuple(dict.fromkeys(MEETING_FILES + (PLUMBING_FILE,)))
    if args.copy_eval_to:
        size = copy_eval(args.eval_dir, ids, args.copy_eval_to)
        print(f"copied {len(ids)} recordings ({size / 2**20:.1f} MiB) to {args.copy_eval_to}")
        return 0
    try:
        require_torch_device(args.device)
    except DeviceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import torch

    if args.device == "cpu" and args.threads > 0:
        torch.set_num_threads(args.threads)
    sizes = QUICK if args.quick else FULL
    overrides = {"meeting_s": None if args.meeting_minutes is None else 60 * args.meeting_minutes,
                 "chunk_batch": args.chunk_batch, "plumbing_s": args.plumbing_seconds}
    sizes = replace(sizes, **{k: v for k, v in overrides.items() if v is not None})
    t_start = time.perf_counter()
    recordings = load_recordings(args.eval_dir, ids)
    audio = meeting({i: recordings[i] for i in MEETING_FILES}, sizes.meeting_s)
    plumbing_audio = recordings[PLUMBING_FILE]
    if sizes.plumbing_s is not None:
        plumbing_audio = plumbing_audio[:int(sizes.plumbing_s * SAMPLE_RATE)]
    timer = Timer(args.device, sizes.warmup, sizes.repeats)
    rows: list[Row] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="voicekit-bench-gpu-") as tmp:
        pipeline_dir = None
        if {"models", "plumbing"} & set(args.sections):
            try:
                pipeline_dir = random_pipeline(Path(tmp) / "pipeline")
            except Exception as exc:  # noqa: BLE001 - report and go on with the encoder
                errors.append(f"pyannote pipeline not built: {type(exc).__name__}: {exc}")
        ref = None
        if args.device == "cuda":
            ref = run_section(errors, "CPU reference", lambda: reference(audio, pipeline_dir))
        for ct in args.compute_types:
            if "encoder" in args.sections:
                rows += run_section(errors, f"encoder {ct}", lambda: bench_encoder(
                    args.device, ct, audio, sizes, timer, args.threads, ref)) or []
            if pipeline_dir is None:
                continue
            models = run_section(errors, f"load pyannote {ct}", lambda: load_models(
                pipeline_dir, args.device, ct, args.threads))
            if models is None:
                continue
            if "models" in args.sections:
                rows += run_section(errors, f"models {ct}", lambda: bench_models(
                    models, ct, audio, sizes, timer, ref)) or []
            if "plumbing" in args.sections:
                rows += run_section(errors, f"plumbing {ct}", lambda: bench_plumbing(
                    models, ct, plumbing_audio, PLUMBING_FILE, sizes, timer)) or []
            models = None  # free the weights before the next compute type
            if args.device == "cuda":
                torch.cuda.empty_cache()
    info = machine(args.device, args.threads)
    info["wall_s"] = round(time.perf_counter() - t_start, 1)
    info["quick"] = args.quick
    info["sizes"] = asdict(sizes)
    print("\n".join(f"{k}: {v}" for k, v in info.items()))
    print(table(rows))
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": info, "rows": [asdict(r) for r in rows], "errors": errors},
                                        indent=1))
    return 1 if errors else 0


def run_section(errors: list[str], name: str, fn: Callable[[], object]):
    """``fn()``; an exception is recorded in ``errors`` (printed at the end) and None returned,
    so that one failing section on the device still leaves the others' numbers."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return None


if __name__ == "__main__":
    sys.exit(main())
