"""Turn-level online diarization.

A meeting assistant emits a turn when its utterance ends, so the decision for an utterance may
use the whole utterance and everything heard before it, never the future. For each utterance:

1. embed sliding windows (:class:`~voicekit.diarization.encoder.SpeakerEncoder`), keeping windows
   that are mostly speech;
2. find speaker changes inside it: the split time that minimises the cosine similarity between
   the mean embedding before and after it, taken when that similarity is below
   ``split_threshold`` and both sides hold enough windows; applied recursively;
3. give each piece to the most similar known speaker, or open a new speaker when no known
   speaker is similar enough (``new_speaker_threshold``), within ``max_speakers``;
4. give each word the speaker of the piece that holds its midpoint, moving each change to the
   nearest gap between words.

Per-speaker state is a duration-weighted centroid and a bounded set of exemplar embeddings.
Labels are "Speaker A", "Speaker B"… in order of first appearance, and never change once given.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from scipy.optimize import linear_sum_assignment

from voicekit.diarization.encoder import SpeakerEncoder, WindowEmbeddings
from voicekit.diarization.refine import spectral_clusters
from voicekit.turns import Word, speaker_label
from voicekit.vad import Utterance


@dataclass(frozen=True)
class DiarizerOptions:
    """Options of the online diarizer (similarities are cosine similarities in [-1, 1]).

    Attributes:
        new_speaker_threshold: a piece whose best similarity to the known speakers is below
            this opens a new speaker.
        split_threshold: a split inside an utterance is taken when the similarity of the mean
            embeddings on its two sides is below this.
        min_split_windows: each side of a split needs at least this many windows.
        min_new_speaker_seconds: a piece shorter than this (seconds) never opens a new speaker
            when one exists (short pieces give unreliable embeddings).
        num_speakers / min_speakers / max_speakers: speaker-count constraints (None = automatic).
        max_exemplars: exemplar embeddings kept per speaker.
    """

    new_speaker_threshold: float = 0.75
    merge_threshold: float = 0.8
    min_run_windows: int = 2
    min_new_speaker_seconds: float = 1.0
    max_history_windows: int = 800
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    max_exemplars: int = 64

    @property
    def speaker_cap(self) -> int | None:
        """The most speakers allowed (``num_speakers`` or ``max_speakers``)."""
        return self.num_speakers or self.max_speakers


@dataclass
class SpeakerState:
    """What the diarizer keeps about one speaker.

    Attributes:
        label: "Speaker A"….
        total: ``(256,)`` float64 duration-weighted sum of piece embeddings.
        seconds: seconds of speech attributed.
        exemplars: bounded deque of ``(256,)`` float32 piece embeddings.
    """

    label: str
    total: np.ndarray
    seconds: float = 0.0
    exemplars: deque = field(default_factory=lambda: deque(maxlen=64))

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


def find_changes(emb: WindowEmbeddings, threshold: float, min_windows: int, depth: int = 3) -> list[float]:
    """Speaker-change times inside one utterance.

    Args:
        emb: the utterance's window embeddings, in time order.
        threshold: split when the cosine similarity between the mean embeddings before and after
            the change is below this.
        min_windows: each side needs at least this many windows.
        depth: maximum recursion depth (at most ``2**depth - 1`` changes).

    Returns:
        sorted change times in seconds (midpoint between the window centres on either side).
    """
    n = len(emb)
    if depth <= 0 or n < 2 * min_windows:
        return []
    v = emb.vectors.astype(np.float64)
    csum = np.cumsum(v, axis=0)
    total = csum[-1]
    best_k, best_sim = -1, 2.0
    for k in range(min_windows, n - min_windows + 1):
        left = _unit(csum[k - 1])
        right = _unit(total - csum[k - 1])
        sim = float(left @ right)
        if sim < best_sim:
            best_k, best_sim = k, sim
    if best_k < 0 or best_sim >= threshold:
        return []
    centers = emb.centers
    t = float((centers[best_k - 1] + centers[best_k]) / 2)
    left = find_changes(emb.take(slice(0, best_k)), threshold, min_windows, depth - 1)
    right = find_changes(emb.take(slice(best_k, n)), threshold, min_windows, depth - 1)
    return sorted(left + [t] + right)


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

    For each utterance, the windows of the past (with the labels they were emitted under) and
    the new windows are clustered together (:func:`~voicekit.diarization.refine.spectral_clusters`);
    clusters are matched to the past labels (Hungarian assignment on shared windows), so past
    evidence is re-scored as it grows while emitted labels never change. Clusters whose
    centroids are more similar than ``merge_threshold`` are one speaker. A cluster that holds
    only new windows opens a new speaker when it is long enough and unlike every known speaker.

    Args:
        encoder: the speaker encoder.
        options: :class:`DiarizerOptions`.

    Attributes:
        speakers: the :class:`SpeakerState` of every speaker opened so far, in order.
        history: per utterance, ``(utterance index, WindowEmbeddings)`` of the windows used,
            kept for offline refinement.
    """

    def __init__(self, encoder: SpeakerEncoder, options: DiarizerOptions | None = None) -> None:
        self.encoder = encoder
        self.opt = options or DiarizerOptions()
        self.speakers: list[SpeakerState] = []
        self.history: list[tuple[int, WindowEmbeddings]] = []
        self._past_vectors = np.zeros((0, encoder.dimension), dtype=np.float32)
        self._past_labels = np.zeros(0, dtype=int)

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
        self._past_vectors = np.concatenate([self._past_vectors, vectors.astype(np.float32)])
        self._past_labels = np.concatenate([self._past_labels, labels])
        cap = self.opt.max_history_windows
        while len(self._past_labels) > cap:
            # drop the oldest window of the speaker with the most windows: bounded memory,
            # while every speaker keeps its evidence
            counts = np.bincount(self._past_labels)
            victim = int(np.argmax(counts))
            i = int(np.flatnonzero(self._past_labels == victim)[0])
            self._past_vectors = np.delete(self._past_vectors, i, axis=0)
            self._past_labels = np.delete(self._past_labels, i)
        for idx, state in enumerate(self.speakers):
            mask = labels == idx
            if mask.any():
                state.total += vectors[mask].astype(np.float64).sum(axis=0)
                state.seconds += float(mask.sum()) * self.encoder.hop_frames / 100
                for v in vectors[mask][-4:]:
                    state.exemplars.append(v.astype(np.float32))

    def _open(self) -> int:
        self.speakers.append(SpeakerState(speaker_label(len(self.speakers)),
                                          np.zeros(self.encoder.dimension), 0.0,
                                          deque(maxlen=self.opt.max_exemplars)))
        return len(self.speakers) - 1

    def _nearest(self, vector: np.ndarray) -> tuple[int, float]:
        sims = np.array([float(vector @ s.centroid) for s in self.speakers])
        best = int(np.argmax(sims))
        return best, float(sims[best])

    # --- decision -----------------------------------------------------------------------------
    def _label_windows(self, vectors: np.ndarray) -> np.ndarray:
        """Speaker index for each new window, using the past windows as labelled evidence."""
        opt = self.opt
        n_past = len(self._past_labels)
        pool = np.concatenate([self._past_vectors, vectors])
        cap = opt.speaker_cap
        clusters = spectral_clusters(pool, opt.num_speakers, opt.min_speakers or 1, cap or 8)
        clusters = merge_similar(pool, clusters, opt.merge_threshold, keep=opt.num_speakers)
        new = clusters[n_past:]
        labels = np.full(len(vectors), -1, dtype=int)
        if n_past:
            past = clusters[:n_past]
            k = int(clusters.max()) + 1
            counts = np.zeros((k, len(self.speakers)))
            np.add.at(counts, (past, self._past_labels), 1)
            rows, cols = linear_sum_assignment(-counts)
            mapping = {int(r): int(c) for r, c in zip(rows, cols) if counts[r, c] > 0}
        else:
            mapping = {}
        window_seconds = self.encoder.hop_frames / 100
        for c in np.unique(new):
            mask = new == c
            if int(c) in mapping:
                labels[mask] = mapping[int(c)]
                continue
            centroid = _unit(vectors[mask].astype(np.float64).mean(axis=0))
            at_cap = cap is not None and len(self.speakers) >= cap
            long_enough = mask.sum() * window_seconds >= opt.min_new_speaker_seconds or not self.speakers
            if self.speakers:
                best, sim = self._nearest(centroid)
            else:
                best, sim = -1, -1.0
            if not at_cap and long_enough and (sim < opt.new_speaker_threshold or not self.speakers):
                labels[mask] = self._open()
            else:
                labels[mask] = best
        return smooth_labels(labels, opt.min_run_windows)

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


def merge_similar(vectors: np.ndarray, clusters: np.ndarray, threshold: float, keep: int | None = None) -> np.ndarray:
    """Merge clusters whose unit-norm centroids have cosine similarity above ``threshold``
    (closest pair first), never below ``keep`` clusters. Returns renumbered labels (order of
    first appearance)."""
    labels = clusters.copy()
    while True:
        ids = list(dict.fromkeys(labels.tolist()))
        if len(ids) <= max(1, keep or 1):
            break
        cents = np.stack([_unit(vectors[labels == i].astype(np.float64).mean(axis=0)) for i in ids])
        sim = cents @ cents.T
        np.fill_diagonal(sim, -2)
        a, b = np.unravel_index(int(np.argmax(sim)), sim.shape)
        if sim[a, b] < threshold:
            break
        labels[labels == ids[b]] = ids[a]
    order: dict[int, int] = {}
    for lab in labels:
        order.setdefault(int(lab), len(order))
    return np.array([order[int(x)] for x in labels], dtype=int)


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
