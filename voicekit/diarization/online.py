"""Turn-level online diarization.

A meeting assistant emits a turn when its utterance ends, so the decision for an utterance may
use the whole utterance and everything heard before it, never the future. For each utterance:

1. embed sliding windows (:class:`~voicekit.diarization.encoder.SpeakerEncoder`, 1.0 s every
   0.25 s), keeping windows that are mostly speech;
2. cluster the utterance's windows (spectral clustering with the eigengap, as in refinement);
3. give each local cluster to the most similar known speaker, or open a new speaker when no
   known speaker is similar enough (``new_speaker_threshold``), within the speaker-count limits;
   runs shorter than ``min_run_windows`` are smoothed away;
4. where the window labels change, place a speaker change, moved to the nearest gap between
   words; each word takes the speaker of the piece that holds its midpoint.

Per-speaker state is one centroid (a sum of window embeddings): memory does not grow with the
meeting, except the window history kept for offline refinement.
Labels are "Speaker A", "Speaker B"… in order of first appearance, and never change once given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voicekit.diarization.encoder import SpeakerEncoder, WindowEmbeddings
from voicekit.diarization.refine import spectral_clusters
from voicekit.turns import Word, speaker_label
from voicekit.vad import Utterance


@dataclass(frozen=True)
class DiarizerOptions:
    """Options of the online diarizer (similarities are cosine similarities in [-1, 1]).

    Attributes:
        new_speaker_threshold: a local cluster whose best similarity to the known speakers'
            centroids is below this opens a new speaker (0.8: the best of a grid on the 18
            evaluation files other than the acceptance file, scripts/tune_diarization.py).
        min_run_windows: label runs shorter than this many windows are smoothed away.
        min_new_speaker_seconds: a cluster shorter than this (seconds) never opens a new speaker
            when one exists (short pieces give unreliable embeddings).
        num_speakers / min_speakers / max_speakers: speaker-count constraints (None = automatic);
            ``num_speakers`` is both the minimum and the maximum.
    """

    new_speaker_threshold: float = 0.8
    min_run_windows: int = 2
    min_new_speaker_seconds: float = 1.0
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None

    @property
    def speaker_cap(self) -> int | None:
        """The most speakers allowed (``num_speakers`` or ``max_speakers``)."""
        return self.num_speakers or self.max_speakers

    @property
    def speaker_floor(self) -> int | None:
        """The fewest speakers expected (``num_speakers`` or ``min_speakers``)."""
        return self.num_speakers or self.min_speakers


@dataclass
class SpeakerState:
    """What the diarizer keeps about one speaker.

    Attributes:
        label: "Speaker A"….
        total: ``(256,)`` float64 sum of the speaker's window embeddings.
        seconds: seconds of speech attributed.
    """

    label: str
    total: np.ndarray
    seconds: float = 0.0

    @property
    def centroid(self) -> np.ndarray:
        """``(256,)`` float32 unit-norm centroid."""
        n = np.linalg.norm(self.total)
        return (self.total / n).astype(np.float32) if n > 0 else self.total.astype(np.float32)


@dataclass(frozen=True)
class Piece:
    """A stretch of one utterance given to one speaker.

    Attributes:
        start / end: seconds; the first piece starts at the utterance start, the last ends at its end.
        speaker: the label.
        similarity: cosine similarity of the piece to the speaker it was given (1.0 for a new one).
    """

    start: float
    end: float
    speaker: str
    similarity: float


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n > 0 else v


def snap_to_word_gaps(changes: list[float], words: list[Word]) -> list[float]:
    """Move each change time to the nearest gap between two words (midpoint of the gap).

    Changes that land before the first word or after the last, or on the same gap as another,
    are dropped.
    """
    if len(words) < 2:
        return []
    gaps = np.array([(words[i].end + words[i + 1].start) / 2 for i in range(len(words) - 1)])
    snapped: list[float] = []
    for t in changes:
        g = float(gaps[int(np.argmin(np.abs(gaps - t)))])
        if g not in snapped:
            snapped.append(g)
    return sorted(snapped)


class OnlineDiarizer:
    """Assign each utterance's words to speakers, online, one utterance at a time.

    Labels, once emitted, never change; each utterance's windows are added to the centroid of
    the speaker they were emitted under, so later decisions use all earlier evidence.

    Args:
        encoder: the speaker encoder.
        options: :class:`DiarizerOptions`.

    Attributes:
        speakers: the :class:`SpeakerState` of every speaker opened so far, in order.
        history: per utterance, ``(utterance index, WindowEmbeddings)`` of the windows used,
            kept for offline refinement (256 float32 per window: about 3.7 MB per hour).
    """

    def __init__(self, encoder: SpeakerEncoder, options: DiarizerOptions | None = None) -> None:
        self.encoder = encoder
        self.opt = options or DiarizerOptions()
        self.speakers: list[SpeakerState] = []
        self.history: list[tuple[int, WindowEmbeddings]] = []

    # --- evidence -----------------------------------------------------------------------------
    def _speech_windows(self, utt: Utterance, emb: WindowEmbeddings) -> WindowEmbeddings:
        if len(emb) <= 1 or len(utt.speech) == 0:
            return emb
        keep = np.zeros(len(emb), dtype=bool)
        for i, (s, e) in enumerate(zip(emb.starts, emb.ends)):
            a = int((s - utt.start) / utt.frame_seconds)
            b = max(a + 1, int(np.ceil((e - utt.start) / utt.frame_seconds)))
            keep[i] = utt.speech[a:b].mean() >= 0.5 if b > a else False
        return emb.take(keep) if keep.any() else emb

    def _remember(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Add an utterance's windows, with the labels they were emitted under, to the speakers'
        centroid sums."""
        for idx, state in enumerate(self.speakers):
            mask = labels == idx
            if mask.any():
                state.total += vectors[mask].astype(np.float64).sum(axis=0)
                state.seconds += float(mask.sum()) * self.encoder.hop_frames / 100

    def _open(self, direction: np.ndarray) -> int:
        # a tiny weight on the opening cluster's direction, so that a second cluster of the same
        # utterance can be compared with it before the windows are added in _remember
        self.speakers.append(SpeakerState(speaker_label(len(self.speakers)),
                                          direction.astype(np.float64) * 1e-3))
        return len(self.speakers) - 1

    def _nearest(self, vector: np.ndarray) -> tuple[int, float]:
        sims = np.array([float(vector @ s.centroid) for s in self.speakers])
        best = int(np.argmax(sims))
        return best, float(sims[best])

    # --- decision -----------------------------------------------------------------------------
    def _label_windows(self, vectors: np.ndarray) -> np.ndarray:
        """Speaker index for each window of a new utterance.

        The utterance's windows are clustered on their own (spectral clustering, eigengap); each
        local cluster, largest first, goes to the known speaker with the most similar centroid
        (speakers opened by an earlier cluster of the same utterance included), or opens a new
        speaker when none reaches ``new_speaker_threshold`` and the cluster holds at least
        ``min_new_speaker_seconds`` of speech (always, for the first speaker). Over-split local
        clusters of one speaker therefore end up with the same speaker.
        """
        opt = self.opt
        cap = opt.speaker_cap
        known = len(self.speakers)
        local = spectral_clusters(vectors, None, 1, cap or 8)
        labels = np.full(len(vectors), -1, dtype=int)
        window_seconds = self.encoder.hop_frames / 100
        for c in sorted(set(local.tolist()), key=lambda k: -int((local == k).sum())):
            mask = local == c
            centroid = _unit(vectors[mask].astype(np.float64).mean(axis=0))
            if not self.speakers:
                labels[mask] = self._open(centroid)
                continue
            best, sim = self._nearest(centroid)
            at_cap = cap is not None and len(self.speakers) >= cap
            below_min = opt.speaker_floor is not None and len(self.speakers) < opt.speaker_floor
            long_enough = mask.sum() * window_seconds >= opt.min_new_speaker_seconds
            if not at_cap and (below_min or (long_enough and sim < opt.new_speaker_threshold)):
                labels[mask] = self._open(centroid)
            else:
                labels[mask] = best
        labels = smooth_labels(labels, opt.min_run_windows)
        # speakers opened here are numbered by their first window in time, and one whose windows
        # were all smoothed away is forgotten: labels stay "Speaker A, B, C…" in order of first
        # appearance, without gaps
        kept = [int(i) for i in dict.fromkeys(labels.tolist()) if i >= known]
        if kept != list(range(known, len(self.speakers))):
            remap = {old: known + new for new, old in enumerate(kept)}
            self.speakers = self.speakers[:known] + [self.speakers[i] for i in kept]
            for i, state in enumerate(self.speakers[known:], start=known):
                state.label = speaker_label(i)
            labels = np.array([remap.get(int(x), int(x)) for x in labels], dtype=int)
        return labels

    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """Diarize one utterance.

        Args:
            utt: the utterance (audio and VAD frames).
            words: its words from STT, times in seconds.

        Returns:
            ``(words with .speaker set, pieces)``. Both are empty when the utterance has no words.
        """
        if not words:
            return [], []
        emb = self._speech_windows(utt, self.encoder.embed_windows(utt.samples, utt.start))
        if len(emb) == 0:
            return [], []
        self.history.append((utt.index, emb))
        labels = self._label_windows(emb.vectors)
        centers = emb.centers
        changes = [float((centers[i - 1] + centers[i]) / 2) for i in range(1, len(labels)) if labels[i] != labels[i - 1]]
        changes = snap_to_word_gaps(changes, words)
        bounds = [utt.start] + changes + [utt.end]
        pieces: list[Piece] = []
        for a, b in zip(bounds[:-1], bounds[1:]):
            mask = (centers >= a) & (centers < b)
            if not mask.any():
                mask = np.abs(centers - (a + b) / 2) == np.min(np.abs(centers - (a + b) / 2))
            idx = int(np.bincount(labels[mask]).argmax())
            label = self.speakers[idx].label
            vector = _unit(emb.vectors[mask].astype(np.float64).mean(axis=0))
            sim = float(vector @ self.speakers[idx].centroid) if self.speakers[idx].seconds else 1.0
            if pieces and pieces[-1].speaker == label:
                prev = pieces.pop()
                pieces.append(Piece(prev.start, b, label, min(prev.similarity, sim)))
            else:
                pieces.append(Piece(a, b, label, sim))
        out = []
        for w in words:
            mid = (w.start + w.end) / 2
            piece = next((p for p in pieces if p.start <= mid < p.end), pieces[-1] if mid >= pieces[-1].start else pieces[0])
            out.append(Word(w.start, w.end, w.text, w.probability, piece.speaker))
        # the emitted labels become evidence for the next utterances
        index = {s.label: i for i, s in enumerate(self.speakers)}
        emitted = np.array([index[next((p.speaker for p in pieces if p.start <= c < p.end), pieces[-1].speaker)]
                            for c in centers])
        self._remember(emb.vectors, emitted)
        return out, pieces


def smooth_labels(labels: np.ndarray, min_run: int) -> np.ndarray:
    """Relabel runs shorter than ``min_run`` windows with the label of the longer neighbouring run."""
    labels = labels.copy()
    if min_run <= 1 or len(labels) <= min_run:
        return labels
    changed = True
    while changed:
        changed = False
        runs = []
        start = 0
        for i in range(1, len(labels) + 1):
            if i == len(labels) or labels[i] != labels[start]:
                runs.append((start, i))
                start = i
        if len(runs) <= 1:
            break
        for j, (a, b) in enumerate(runs):
            if b - a < min_run:
                left = runs[j - 1] if j > 0 else None
                right = runs[j + 1] if j + 1 < len(runs) else None
                pick = max((r for r in (left, right) if r), key=lambda r: r[1] - r[0])
                labels[a:b] = labels[pick[0]]
                changed = True
                break
    return labels
