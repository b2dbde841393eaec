"""pyannote.audio as the diarization backend (``--diarizer pyannote[:PATH_OR_NAME]``).

Two modes behind the :class:`~voicekit.diarization.base.Diarizer` interface:

* offline (:class:`PyannoteOfflineDiarizer`): pyannote's speaker-diarization pipeline runs once on
  the whole recording (pyannote.audio 4.0, ``pyannote/speaker-diarization-community-1`` or 3.1);
  each Whisper word then takes the speaker whose turns overlap it most, or the nearest turn when it
  falls in a gap (:func:`assign_speakers`);
* streaming (:class:`PyannoteStreamingDiarizer`): the pipeline's segmentation and embedding models
  on a rolling window, as diart publishes it (Coria, Bredin, Ghannay, Rosset, "Overlap-aware
  low-latency online speaker diarization based on end-to-end local segmentation", ASRU 2021): a
  5 s window every 0.5 s; local speakers active in a window (peak activation >= ``tau_active``) are
  embedded with the overlapped-speech penalty (weights ``(p * softmax(beta * p))**gamma``), matched
  to the global speaker centroids by the Hungarian algorithm on cosine distance (a match needs a
  distance below ``delta_new``, else a new speaker), and a centroid is updated only by local
  speakers active for at least ``rho_update`` of the window. The windows' activations are averaged
  (Hamming-weighted) over an utterance when it closes, binarised at 0.5, and the words are mapped
  as in the offline mode.

pyannote.audio is an optional extra (docs/pyannote.md). Nothing is downloaded at run time: a
pipeline is a local directory (``config.yaml`` plus its checkpoints) or a Hugging Face name
already in the local cache, loaded with the hub in offline mode. Audio is always passed in memory
(``{"waveform": (channel, time) tensor, "sample_rate": 16000}``), so torchcodec is never used.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment

from voicekit.audio import SAMPLE_RATE
from voicekit.devices import require_torch_device, torch_precision
from voicekit.diarization.online import DiarizerOptions, Piece
from voicekit.models import ModelError
from voicekit.turns import SpeakerLabels, SpeakerTurn, Word
from voicekit.vad import Utterance

DEFAULT_PIPELINE = "pyannote/speaker-diarization-community-1"

INSTALL_HINT = ("install it with `sh scripts/install_pyannote.sh .venv/bin/python` from the voicekit "
                "checkout (the `pyannote` extra plus pyannote.audio 4.0.7 without its CUDA torchaudio/"
                "torchcodec wheels; docs/pyannote.md)")


@dataclass(frozen=True)
class SpeakerSegment:
    """One speaker turn of a diarization: ``start``/``end`` in seconds, ``label`` as the backend
    names it (``SPEAKER_00``… for pyannote, before voicekit's "Speaker A" renaming)."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class PyannoteOptions:
    """Options of the pyannote backend.

    Attributes:
        source: a local pipeline directory (with ``config.yaml``), a ``config.yaml`` file, or a
            Hugging Face pipeline name already in the local cache (default
            ``pyannote/speaker-diarization-community-1``).
        mode: ``offline`` (the pipeline on the whole recording) or ``streaming``.
        window / step: streaming window length and step in seconds (diart: 5.0 / 0.5).
        tau_active: a local speaker whose peak activation reaches this is active (diart: 0.6).
        rho_update: a local speaker active for at least this fraction of the window updates its
            centroid, and only such a speaker opens a new one once one exists (diart: 0.3).
        delta_new: cosine distance at or above which a local speaker is not matched to a known
            centroid (diart: 1.0).
        gamma / beta: overlapped-speech penalty exponent and softmax temperature (diart: 3 / 10).
        onset: activation above which an averaged speaker activation counts as speech (0.5).
    """

    source: str = DEFAULT_PIPELINE
    mode: str = "streaming"
    window: float = 5.0
    step: float = 0.5
    tau_active: float = 0.6
    rho_update: float = 0.3
    delta_new: float = 1.0
    gamma: float = 3.0
    beta: float = 10.0
    onset: float = 0.5


def parse_diarizer(spec: str) -> str | None:
    """``--diarizer`` value -> pipeline source, or None for the embedded diarizer.

    ``embedded`` -> None; ``pyannote`` -> :data:`DEFAULT_PIPELINE`; ``pyannote:PATH_OR_NAME`` ->
    ``PATH_OR_NAME``.

    Raises:
        ValueError: for anything else.
    """
    if spec == "embedded":
        return None
    if spec == "pyannote":
        return DEFAULT_PIPELINE
    if spec.startswith("pyannote:") and spec[len("pyannote:"):].strip():
        return spec[len("pyannote:"):].strip()
    raise ValueError(f"--diarizer {spec!r}: use embedded (default), pyannote, or pyannote:PATH_OR_NAME")


def import_pyannote():
    """Import ``pyannote.audio`` (telemetry off unless ``PYANNOTE_METRICS_ENABLED`` is set).

    Raises:
        ModelError: when pyannote.audio is not installed or does not import; the message names
            the install step.
    """
    os.environ.setdefault("PYANNOTE_METRICS_ENABLED", "false")
    try:
        with warnings.catch_warnings():
            # torchcodec is not installed on purpose: audio is passed in memory
            warnings.filterwarnings("ignore", message=r"(?s).*torchcodec")
            import pyannote.audio
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError from a broken torchaudio
        raise ModelError(f"--diarizer pyannote needs pyannote.audio, which does not import here "
                         f"({type(exc).__name__}: {exc}); {INSTALL_HINT}") from exc
    return pyannote.audio


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Within the block, the Hugging Face hub only reads its local cache (``HF_HUB_OFFLINE``)."""
    from huggingface_hub import constants

    saved_env, saved = os.environ.get("HF_HUB_OFFLINE"), constants.HF_HUB_OFFLINE
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = saved
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env


def _is_hub_name(source: str) -> bool:
    """``owner/name``: what Hugging Face calls a repository id."""
    parts = source.split("/")
    return (len(parts) == 2 and all(parts) and not source.startswith((".", "~"))
            and not source.endswith((".yaml", ".yml")))


def _hub_names(source: str) -> list[str]:
    """The Hugging Face names (``org/name``) that a local pipeline's config.yaml gives for its
    models, where no such path exists beside it; empty when the file cannot be read."""
    import yaml

    path = Path(source)
    config = path / "config.yaml" if path.is_dir() else path
    try:
        data = yaml.safe_load(config.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return []
    found: list[str] = []
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _is_hub_name(item) and not item.startswith("$") \
                and not (config.parent / item).exists() \
                and item not in found:
            found.append(item)
    return sorted(found)


class PyannoteModels:
    """A loaded pyannote speaker-diarization pipeline and, for streaming, its two models.

    Args:
        source: see :attr:`PyannoteOptions.source`.
        device: ``cpu`` or ``cuda``.
        compute_type: ``--compute-type``: forward passes run under
            :func:`voicekit.devices.torch_precision`.
        threads: torch intra-op threads on CPU (0 leaves torch's default).

    Raises:
        ModelError: pyannote.audio missing; ``source`` neither an existing directory/config file
            nor a pipeline in the local Hugging Face cache; or a checkpoint that does not load.
        voicekit.devices.DeviceError: ``cuda`` asked for but not available.
    """

    def __init__(self, source: str = DEFAULT_PIPELINE, device: str = "cpu", compute_type: str = "default",
                 threads: int = 1) -> None:
        torch_device = require_torch_device(device)
        pyannote_audio = import_pyannote()
        import torch

        if device == "cpu" and threads > 0:
            torch.set_num_threads(threads)
        self.source = source
        self.device = device
        self._precision = lambda: torch_precision(device, compute_type)
        local = Path(source).expanduser()
        if not local.exists() and not _is_hub_name(source):
            raise ModelError(f"pyannote pipeline {source!r}: no such file or directory; give a directory "
                             "holding config.yaml and its checkpoints, or a Hugging Face name")
        if local.is_file() and local.suffix.lower() not in (".yaml", ".yml"):   # a checkpoint, say
            folder = local.parent.parent if local.parent.name in ("segmentation", "embedding") else local.parent
            raise ModelError(f"pyannote pipeline {source!r} is a file: give the pipeline's folder, the one that "
                             f"holds config.yaml (perhaps {folder})")
        if local.is_dir() and not (local / "config.yaml").is_file():
            raise ModelError(f"pyannote pipeline {source!r} holds no config.yaml: give the directory of a "
                             "pyannote pipeline (config.yaml beside its checkpoints), or a Hugging Face name")
        target = str(local) if local.exists() else source
        try:
            with hub_offline(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pipeline = pyannote_audio.Pipeline.from_pretrained(target)
        except Exception as exc:  # noqa: BLE001 - hub errors, unpickling errors, missing files…
            raise ModelError(self._load_error(source, local.exists(), exc)) from exc
        if pipeline is None:
            raise ModelError(self._load_error(source, local.exists(), None))
        if not hasattr(pipeline, "_segmentation") or not hasattr(pipeline, "_embedding"):
            raise ModelError(f"pyannote pipeline {source!r} is a {type(pipeline).__name__}, not a speaker-"
                             "diarization pipeline with segmentation and embedding models")
        pipeline.to(torch_device)
        self.pipeline = pipeline
        self.segmentation_model = pipeline._segmentation.model
        self.segmentation_model.eval()
        self.embedding = pipeline._embedding
        specs = self.segmentation_model.specifications
        specs = specs[0] if isinstance(specs, tuple) else specs
        self._powerset = None
        if specs.powerset:
            from pyannote.audio.utils.powerset import Powerset

            self._powerset = Powerset(len(specs.classes), specs.powerset_max_classes).to(torch_device)
        self.lock = threading.Lock()
        self._check_models(source, specs.duration)

    def _check_models(self, source: str, chunk_seconds: float) -> None:
        """Run each model once on one chunk of low noise and check the shapes of what comes out:
        checkpoints that load but are the wrong model (segmentation and embedding swapped in
        config.yaml) failed on the first utterance, after ``--overwrite`` had replaced a meeting.

        Raises:
            ModelError: the segmentation model does not give ``(1, frames, speakers)`` activations,
                or the embedding model one ``(1, dimension)`` embedding. A device error (CUDA out
                of memory, a driver error) is raised as it is: config.yaml is not its cause.
        """
        chunk = np.random.default_rng(0).normal(0.0, 0.01, (1, int(round(chunk_seconds * SAMPLE_RATE))))
        try:
            activations = self.segment(chunk.astype(np.float32))
            if activations.ndim != 3 or activations.shape[0] != 1 or min(activations.shape[1:]) < 1:
                raise ValueError(f"the segmentation model gave activations of shape {activations.shape}, "
                                 "not (1, frames, speakers)")
            embedding = self.embed(chunk.astype(np.float32), np.ones(activations.shape[:2], np.float32))
            if embedding.ndim != 2 or embedding.shape[0] != 1:
                raise ValueError(f"the embedding model gave an embedding of shape {embedding.shape}, not (1, dimension)")
        except Exception as exc:  # noqa: BLE001 - whatever a wrong model raises, one line with the fix
            if type(exc).__name__ == "OutOfMemoryError" or "CUDA" in str(exc) or "out of memory" in str(exc):
                raise   # the device's trouble (memory, driver), not the checkpoints': its own message
            raise ModelError(f"pyannote pipeline {source!r} loads but its models do not run as a segmentation and "
                             f"an embedding model ({type(exc).__name__}: {exc}): check that the segmentation and "
                             "embedding entries of its config.yaml name the right checkpoints (not swapped, "
                             "not another kind of model)") from exc

    @staticmethod
    def _load_error(source: str, is_local: bool, exc: BaseException | None) -> str:
        why = f" ({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''})" if exc else ""
        text, kind = str(exc), type(exc).__name__
        offline = kind in ("LocalEntryNotFoundError", "OfflineModeIsEnabled") or "Internet connection" in text
        if exc is not None and (kind in ("UnpicklingError", "EOFError") or "load key" in text
                                or "PytorchStreamReader" in text):   # (torch's zip checkpoints, cut short)
            return (f"pyannote pipeline {source!r} does not load{why}: a checkpoint its config.yaml names is "
                    "not a whole PyTorch checkpoint (damaged, cut short, or another kind of file); "
                    + ("check or fetch again the checkpoint files (pytorch_model.bin…) under the segmentation "
                       "and embedding entries of its config.yaml" if is_local else
                       f"fetch it again on a machine with internet: `hf download {source} --force-download`"))
        if is_local and isinstance(exc, KeyError) and text.strip("'\"") == "pipeline":
            return (f"pyannote pipeline {source!r} does not load{why}: its config.yaml describes a model (a "
                    "segmentation or embedding checkpoint), not a pipeline: give the folder of a diarization "
                    "pipeline, whose config.yaml has a `pipeline:` entry (pyannote/speaker-diarization-community-1 "
                    "or -3.1)")
        if is_local and offline:   # a downloaded 3.1 folder names hub models that are not cached here
            hub = ", ".join(f"`hf download {name}`" for name in _hub_names(source)) or "`hf download <name>` for each"
            return (f"pyannote pipeline {source!r} does not load: its config.yaml names models by their Hugging "
                    f"Face names, which are not in the local cache, and nothing is downloaded at run time; on a "
                    f"machine with internet run {hub} (or put their folders beside config.yaml and name those)")
        if is_local and exc is not None and type(exc).__module__.startswith("yaml"):
            return f"pyannote pipeline {source!r}: its config.yaml is not valid YAML{why}; fix or fetch it again"
        if is_local and isinstance(exc, KeyError) and "pyannote.audio" in str(exc):
            return (f"pyannote pipeline {source!r} does not load{why}: a checkpoint its config.yaml names is a "
                    "PyTorch file but not a pyannote.audio model (another kind of checkpoint); check the "
                    "checkpoint files under the segmentation and embedding entries of its config.yaml")
        if is_local:
            return (f"pyannote pipeline {source!r} does not load{why}; its config.yaml must name checkpoints "
                    "that exist locally ($model/… subfolders or paths); `plda` must be an existing directory "
                    "with xvec_transform.npz and plda.npz, since a missing path is taken for a hub name")
        if offline:
            why = ""   # the hub's own text asks to check the internet connection: nothing is fetched here anyway
        needs = (" and the models its config names (for 3.1: `hf download pyannote/segmentation-3.0` and "
                 "`hf download pyannote/wespeaker-voxceleb-resnet34-LM`)" if source.endswith("-3.1") else "")
        return (f"pyannote pipeline {source!r} is not in the local Hugging Face cache and nothing is downloaded "
                f"at run time{why}; on a machine with internet, accept its conditions on the hub, log in and "
                f"run `hf download {source}`{needs} (or copy the downloaded folder here and pass "
                "--diarizer pyannote:/path/to/folder)")

    # --- offline ------------------------------------------------------------------------------
    def diarize(self, samples: np.ndarray, num_speakers: int | None = None, min_speakers: int | None = None,
                max_speakers: int | None = None) -> list[SpeakerSegment]:
        """Run the whole pipeline on a recording.

        Args:
            samples: ``(n,)`` float32 at 16 kHz, the whole recording.
            num_speakers / min_speakers / max_speakers: passed to the pipeline.

        Returns:
            the speaker turns (overlapping turns kept), sorted by start, times in seconds.
        """
        import torch

        waveform = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))[None]
        with self.lock, self._precision(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = self.pipeline({"waveform": waveform, "sample_rate": SAMPLE_RATE}, num_speakers=num_speakers,
                                min_speakers=min_speakers, max_speakers=max_speakers)
        annotation = getattr(out, "speaker_diarization", out)
        segs = [SpeakerSegment(round(float(s.start), 3), round(float(s.end), 3), str(label))
                for s, _track, label in annotation.itertracks(yield_label=True)]
        return sorted(segs, key=lambda s: (s.start, s.end, s.label))

    # --- streaming ----------------------------------------------------------------------------
    def frame_times(self, num_frames: int) -> np.ndarray:
        """``(num_frames,)`` centre time in seconds of each segmentation frame, from the chunk start."""
        rf = self.segmentation_model.receptive_field
        return rf.start + rf.duration / 2 + rf.step * np.arange(num_frames)

    def segment(self, chunks: np.ndarray) -> np.ndarray:
        """Local speaker activations of chunks.

        Args:
            chunks: ``(batch, n_samples)`` float32 at 16 kHz.

        Returns:
            ``(batch, frames, local_speakers)`` float32 in [0, 1] (powerset outputs converted to
            soft multi-label).
        """
        import torch

        x = torch.from_numpy(np.ascontiguousarray(chunks, dtype=np.float32))[:, None].to(self.device)
        with self.lock, torch.inference_mode(), self._precision():
            y = self.segmentation_model(x).float()
            if self._powerset is not None:
                y = self._powerset.to_multilabel(y, soft=True)
        return y.clamp(0.0, 1.0).cpu().numpy().astype(np.float32)

    def embed(self, chunks: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Embed one speaker per chunk.

        Args:
            chunks: ``(batch, n_samples)`` float32 at 16 kHz.
            weights: ``(batch, frames)`` float32 frame weights of the speaker.

        Returns:
            ``(batch, dimension)`` float32, L2-normalised; rows are NaN when the model could not
            embed (weights too short).
        """
        import torch

        x = torch.from_numpy(np.ascontiguousarray(chunks, dtype=np.float32))[:, None]
        w = torch.from_numpy(np.ascontiguousarray(weights, dtype=np.float32))
        with self.lock, self._precision():
            e = np.asarray(self.embedding(x, masks=w), dtype=np.float32)
        return e / np.linalg.norm(e, axis=1, keepdims=True)


# --- words ----------------------------------------------------------------------------------------
def assign_speakers(words: Sequence[Word], segments: Sequence[SpeakerSegment]) -> list[str | None]:
    """The speaker of each word: the label whose segments overlap the word longest; for a word
    that overlaps none (it falls in a gap), the label of the nearest segment.

    Args:
        words: words with times in seconds.
        segments: speaker turns, times in seconds, in any order, overlaps allowed.

    Returns:
        one label per word (None for every word when ``segments`` is empty).
    """
    if not segments:
        return [None] * len(words)
    starts = np.array([s.start for s in segments])
    ends = np.array([s.end for s in segments])
    labels = [s.label for s in segments]
    names = list(dict.fromkeys(labels))
    index = np.array([names.index(x) for x in labels])
    out: list[str | None] = []
    for w in words:
        overlap = np.clip(np.minimum(ends, w.end) - np.maximum(starts, w.start), 0.0, None)
        per_label = np.bincount(index, weights=overlap, minlength=len(names))
        if per_label.max() > 0:
            out.append(names[int(np.argmax(per_label))])
            continue
        gap = np.maximum(np.maximum(starts - w.end, w.start - ends), 0.0)
        out.append(labels[int(np.argmin(gap))])
    return out


def pieces_from_words(utt: Utterance, words: Sequence[Word], similarity: dict[str, float] | None = None) -> list[Piece]:
    """Pieces of an utterance from its labelled words: a change at the middle of the gap between two
    words of different speakers; the first piece starts at the utterance start, the last ends at its
    end. ``similarity`` gives each speaker's piece similarity (default 1.0)."""
    similarity = similarity or {}
    pieces: list[Piece] = []
    start = utt.start
    for i, w in enumerate(words):
        last = i + 1 == len(words)
        if last or words[i + 1].speaker != w.speaker:
            end = utt.end if last else round((w.end + words[i + 1].start) / 2, 3)
            pieces.append(Piece(start, max(start, end), w.speaker, similarity.get(w.speaker, 1.0)))
            start = max(start, end)
    return pieces


class _Names:
    """Backend labels -> "Speaker A", "Speaker B"… in order of first emission, from ``labels``
    (:class:`~voicekit.turns.SpeakerLabels`: after a resumed meeting's labels, and apart from the
    other lanes' when a meeting shares one)."""

    def __init__(self, labels: SpeakerLabels | None) -> None:
        self.labels = labels if labels is not None else SpeakerLabels()
        self.names: dict[object, str] = {}

    def __call__(self, raw: object) -> str:
        if raw not in self.names:
            if set(self.names) == {-1}:
                # the first speaker found takes the label of what was heard before any was active
                # (the placeholder -1), so that the labels never exceed the speaker count
                self.names[raw] = self.names[-1]
            else:
                self.names[raw] = self.labels.take()
        return self.names[raw]

    def restore(self, names: dict[object, str]) -> None:
        """Go back to ``names`` (a rolled-back utterance); the labels taken since are given back."""
        self.labels.give_back(set(self.names.values()) - set(names.values()))
        self.names = names


class _ResumedLabels:
    """``Diarizer.resume`` for the pyannote backends: new speakers are labelled after the stored
    meeting's; its speakers are not known again (pyannote's embeddings are not kept)."""

    _names: _Names

    def resume(self, turns: Sequence[SpeakerTurn], embeddings: Sequence = (), labels: Iterable[str] = ()) -> None:
        """See :meth:`voicekit.diarization.base.Diarizer.resume`."""
        self._names.labels.reserve([*(t.speaker for t in turns), *labels])


class PyannoteOfflineDiarizer(_ResumedLabels):
    """Words of each utterance labelled from a whole-recording pyannote diarization.

    Args:
        segments: :meth:`PyannoteModels.diarize` of the whole recording.
        labels: where new speakers' labels come from (:class:`~voicekit.turns.SpeakerLabels`;
            by default this diarizer's own).

    Attributes:
        history: always empty (refinement re-clusters the embedded encoder's windows only).
    """

    def __init__(self, segments: Sequence[SpeakerSegment], labels: SpeakerLabels | None = None) -> None:
        self.segments = list(segments)
        self.history: list = []
        self._names = _Names(labels)

    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """See :class:`~voicekit.diarization.base.Diarizer`. A recording in which pyannote found no
        speaker gives every word one speaker."""
        if not words:
            return [], []
        raw = assign_speakers(words, self.segments)
        out = [replace(w, speaker=self._names(r if r is not None else "")) for w, r in zip(words, raw)]
        return out, pieces_from_words(utt, out)


class PyannoteStreamingDiarizer(_ResumedLabels):
    """pyannote's segmentation and embedding models on a rolling window (diart), one utterance at
    a time.

    The stream is rebuilt on its own clock from the utterances (silence between them as zeros);
    when an utterance closes, every window ending on the ``step`` grid inside it (and one ending at
    its end) is processed, oldest first.

    Args:
        models: :class:`PyannoteModels`.
        options: :class:`PyannoteOptions` (window, step, thresholds).
        speakers: speaker-count limits; the cap (``num_speakers`` or ``max_speakers``, else 20 as
            diart) bounds the number of centroids.
        labels: where new speakers' labels come from: one :class:`~voicekit.turns.SpeakerLabels`
            shared by every diarizer of a meeting keeps their labels apart; by default its own.

    Attributes:
        window_ends: stream time (s) at which each processed window ends.
        history: always empty (refinement re-clusters the embedded encoder's windows only).
    """

    def __init__(self, models: PyannoteModels, options: PyannoteOptions | None = None,
                 speakers: DiarizerOptions | None = None, labels: SpeakerLabels | None = None) -> None:
        self.models = models
        self.opt = options or PyannoteOptions()
        self.cap = (speakers or DiarizerOptions()).speaker_cap or 20
        self.window_samples = int(round(self.opt.window * SAMPLE_RATE))
        self._buffer = np.zeros(self.window_samples, dtype=np.float32)  # ends at self._end
        self._end = 0.0
        self.centroids: list[np.ndarray] = []
        self.window_ends: list[float] = []
        self.history: list = []
        self._names = _Names(labels)
        self._last: int | None = None   # the global speaker of the last word emitted

    # --- audio --------------------------------------------------------------------------------
    def _push(self, utt: Utterance) -> float:
        """Append an utterance to the buffer; returns the stream time where its new audio starts."""
        samples = np.asarray(utt.samples, dtype=np.float32)
        begin = max(utt.start, self._end)
        skip = int(round((begin - utt.start) * SAMPLE_RATE))
        gap = min(int(round((begin - self._end) * SAMPLE_RATE)), self.window_samples)
        self._buffer = np.concatenate([self._buffer, np.zeros(gap, np.float32), samples[skip:]])
        self._end = max(self._end, utt.end)
        return begin

    def _window_ends(self, begin: float, end: float) -> list[float]:
        step = self.opt.step
        k0 = int(np.floor(begin / step + 1e-9)) + 1
        ends = [round(k * step, 6) for k in range(k0, int(np.floor(end / step + 1e-9)) + 1)]
        if not ends or end - ends[-1] > 1e-6:
            ends.append(round(end, 6))
        return ends

    # --- clustering (diart) -------------------------------------------------------------------
    def _match(self, emb: np.ndarray, long: np.ndarray) -> tuple[list[int], list[float]]:
        """Global speaker of each active local speaker, and its cosine similarity."""
        n = len(emb)
        out, sims = [-1] * n, [1.0] * n
        if self.centroids:
            cents = np.stack([c / max(np.linalg.norm(c), 1e-12) for c in self.centroids])
            dist = 1.0 - emb @ cents.T
            for r, c in zip(*linear_sum_assignment(dist)):
                if dist[r, c] < self.opt.delta_new:
                    out[r], sims[r] = int(c), float(1.0 - dist[r, c])
        taken = {c for c in out if c >= 0}
        for r in range(n):
            if out[r] >= 0:
                if long[r]:
                    self.centroids[out[r]] = self.centroids[out[r]] + emb[r]
                continue
            if len(self.centroids) < self.cap and (long[r] or not self.centroids):
                self.centroids.append(emb[r].astype(np.float64))
                out[r] = len(self.centroids) - 1
            else:
                cents = np.stack([c / max(np.linalg.norm(c), 1e-12) for c in self.centroids])
                order = np.argsort(-(cents @ emb[r]))
                free = [int(c) for c in order if int(c) not in taken]
                out[r] = free[0] if free else int(order[0])
                sims[r] = float(cents[out[r]] @ emb[r])
            taken.add(out[r])
        return out, sims

    def _penalty(self, act: np.ndarray) -> np.ndarray:
        """diart's overlapped-speech penalty: ``(p * softmax(beta * p))**gamma`` over speakers."""
        z = self.opt.beta * act
        soft = np.exp(z - z.max(axis=-1, keepdims=True))
        soft /= soft.sum(axis=-1, keepdims=True)
        return np.maximum((act * soft) ** self.opt.gamma, 1e-8).astype(np.float32)

    # --- one utterance ------------------------------------------------------------------------
    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """See :class:`~voicekit.diarization.base.Diarizer`.

        Windows are processed even for an utterance without words (the centroids keep learning).
        A word in an utterance where no speaker is active takes the speaker with the most activation
        in it, or, where none was active in the whole utterance, the speaker of the last word
        emitted; before any speaker was active, one speaker for everything heard, whose label the
        first speaker found then takes. When it raises (an
        interrupt during the models, Ctrl-C), the state is as it was before the call.
        """
        # arrays and centroids are replaced, never changed in place: a shallow copy restores them
        state = (self._buffer, self._end, list(self.centroids), len(self.window_ends), dict(self._names.names),
                 self._last)
        try:
            return self._process(utt, words)
        except BaseException:
            self._buffer, self._end, self.centroids, n_ends, names, self._last = state
            self._names.restore(names)
            del self.window_ends[n_ends:]
            raise

    def _process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        begin = self._push(utt)
        ends = self._window_ends(begin, utt.end)
        n_win = self.window_samples
        total = len(self._buffer)
        offsets = [total - int(round((self._end - t) * SAMPLE_RATE)) for t in ends]
        chunks = np.stack([self._buffer[o - n_win:o] for o in offsets])
        self._buffer = self._buffer[-n_win:]
        act = self.models.segment(chunks)                                  # (B, F, K)
        frames = self.models.frame_times(act.shape[1])                      # (F,) from chunk start
        active = act.max(axis=1) >= self.opt.tau_active                     # (B, K)
        long = act.mean(axis=1) >= self.opt.rho_update
        pairs = [(b, k) for b in range(len(ends)) for k in range(act.shape[2]) if active[b, k]]
        emb = np.zeros((0, 1), np.float32)
        if pairs:
            weights = self._penalty(act)
            emb = self.models.embed(chunks[[b for b, _ in pairs]], np.stack([weights[b, :, k] for b, k in pairs]))
        # the utterance's frame grid, Hamming-weighted average of the windows' global activations
        step = float(frames[1] - frames[0]) if len(frames) > 1 else self.opt.window
        grid = utt.start + step / 2 + step * np.arange(max(1, int(np.ceil(utt.duration / step))))
        hamming = np.hamming(act.shape[1]).astype(np.float64) + 1e-3
        acc: dict[int, np.ndarray] = {}
        weight = np.zeros(len(grid))
        best_sim: dict[int, float] = {}
        for b, t_end in enumerate(ends):
            t = t_end - self.opt.window + frames
            idx = np.clip(np.round((t - grid[0]) / step).astype(int), 0, len(grid) - 1)
            inside = (t >= utt.start) & (t < utt.end)
            np.add.at(weight, idx[inside], hamming[inside])
            rows = [i for i, (bb, _) in enumerate(pairs) if bb == b and np.all(np.isfinite(emb[i]))]
            if not rows:
                continue
            glob, sims = self._match(emb[rows], long[b, [pairs[i][1] for i in rows]])
            for i, g, s in zip(rows, glob, sims):
                k = pairs[i][1]
                best_sim[g] = max(best_sim.get(g, -1.0), s)
                acc.setdefault(g, np.zeros(len(grid)))
                np.add.at(acc[g], idx[inside], (act[b, :, k] * hamming)[inside])
        self.window_ends.extend(ends)
        if not words:
            return [], []
        segments = []
        for g, a in acc.items():
            on = a / np.maximum(weight, 1e-9) >= self.opt.onset
            edges = np.flatnonzero(np.diff(np.concatenate([[0], on.astype(int), [0]])))
            for s, e in zip(edges[::2], edges[1::2]):
                segments.append(SpeakerSegment(float(grid[s] - step / 2), float(grid[e - 1] + step / 2), g))
        raw = assign_speakers(words, segments)
        # no speaker active in the whole utterance: the one heard last (a review: a placeholder of
        # its own took a label past --num-speakers), or one for all heard before any was active
        fallback = max(acc, key=lambda g: float(acc[g].sum())) if acc else self._last if self._last is not None else -1
        chosen = [r if r is not None else fallback for r in raw]
        self._last = chosen[-1]
        out = [replace(w, speaker=self._names(g)) for w, g in zip(words, chosen)]
        sims = {self._names(g): s for g, s in best_sim.items() if g in self._names.names}
        return out, pieces_from_words(utt, out, sims)
