"""Turn-level online diarization.

A meeting assistant emits a turn when its utterance ends, so the decision for an utterance may
use the whole utterance and everything heard before it, never the future. For each utterance:

1. embed sliding windows (:class:`~voicekit.diarization.encoder.SpeakerEncoder`, 1.0 s every
   0.25 s), keeping windows that are mostly speech;
2. find speaker changes inside the utterance by binary segmentation: split where the mean
   embeddings left and right of a point are least alike, while they are less alike than the same
   speaker's would be (``change_threshold``), and again inside each part;
3. give each part, in time order, to the known speaker it matches best, or open a new speaker
   when none matches (``known_speaker_threshold``), within the speaker-count limits;
4. move each change to the nearest gap between words; each word takes the speaker of the piece
   that holds its midpoint.

Similarities are compared after correcting for the amount of evidence (see
:func:`evidence_similarity`): the mean of a few noisy window embeddings is less like its speaker's
mean than the mean of many, so a fixed cosine threshold splits short stretches of one speaker and
merges long stretches of two. Per-speaker state is one centroid (a sum of window embeddings) and a
window count: memory does not grow with the meeting, except the window history kept for offline
refinement. Labels are "Speaker A", "Speaker B"… in order of first appearance, and never change
once given.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from voicekit.diarization.encoder import SpeakerEncoder, WindowEmbeddings
from voicekit.diarization.refine import live_window_speakers
from voicekit.turns import SpeakerLabels, SpeakerTurn, Word, speaker_index
from voicekit.vad import Utterance


@dataclass(frozen=True)
class DiarizerOptions:
    """Options of the online diarizer.

    The two thresholds apply to evidence-corrected similarities (:func:`evidence_similarity`:
    about 1.0 for two stretches of the same speaker, whatever their length). Their values are the
    best of a grid on the 18 evaluation files other than the acceptance file
    (``python scripts/tune_diarization.py``; docs/accuracy.md).

    Attributes:
        change_threshold: a point inside an utterance is a speaker change when the stretches
            before and after it are less alike than this (0.92).
        known_speaker_threshold: a stretch less alike than this to every known speaker opens a
            new speaker (0.91).
        speaker_share: the mean cosine similarity of two window embeddings of the same speaker
            (0.77: the mean over the evaluation files' reference speakers); it sets how fast the
            similarity of a mean embedding to its speaker grows with the evidence.
        min_segment_windows: no speaker change leaves fewer windows than this on either side (4:
            1.75 s of audio at the default window and hop).
        min_new_speaker_seconds: a stretch whose windows cover less audio than this (seconds)
            never opens a new speaker when one exists (short stretches give unreliable
            embeddings); 1.75: 4 windows at the default window and hop, as ``min_segment_windows``
            (it was 1.0 counted as 0.25 s per window, the same 4 windows: a review found that
            "1.0 s" meant 1.5-1.75 s of audio).
        floor_threshold: while fewer speakers than ``num_speakers`` / ``min_speakers`` are known,
            a stretch less alike than this to every known speaker opens a new one (0.95, in place
            of ``known_speaker_threshold``: a new speaker opens more readily, never on a stretch
            that is clearly a known voice, nor on a short one). The best of a grid on the 18
            evaluation files other than the acceptance file, each given its true count
            (``python scripts/tune_diarization.py --oracle-count``): opening a speaker on every
            stretch until the count was reached, as before, gave pooled live DER 40.0 % against
            30.3 % with no count given; 0.95 gives 31.2 % and the exact count on 10 of 18.
        num_speakers / min_speakers / max_speakers: speaker-count constraints (None = automatic);
            ``num_speakers`` is both the minimum and the maximum. No more speakers than the
            maximum are opened; the minimum lowers the bar for a new one (``floor_threshold``)
            until it is reached, so a meeting can end with fewer. They count this diarizer's
            speakers: diarizers that share labels (LiveKit lanes) and a resumed meeting whose
            voices were not kept (:meth:`OnlineDiarizer.resume`) each count their own.
        keep_history: keep every utterance's windows in :attr:`OnlineDiarizer.history` for a
            refinement of the whole meeting (``Pipeline.refine``; default True); False keeps only
            the last utterance's (what ``keep_embeddings`` stores), so that a live meeting, which
            is never refined in memory, does not grow by 7-8 MiB per hour (a diarization review).

    Raises:
        ValueError: a speaker count that is not a whole number ≥ 1, or counts that contradict each
            other (``min_speakers`` above ``max_speakers``, ``num_speakers`` outside them).
    """

    change_threshold: float = 0.92
    known_speaker_threshold: float = 0.91
    speaker_share: float = 0.77
    min_segment_windows: int = 4
    min_new_speaker_seconds: float = 1.75
    floor_threshold: float = 0.95
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    keep_history: bool = True

    def __post_init__(self) -> None:
        for name in ("num_speakers", "min_speakers", "max_speakers"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                                      or value < 1):
                raise ValueError(f"{name} is a whole number of speakers, at least 1, or None for automatic; "
                                 f"got {value!r}")
        low, high = self.speaker_floor, self.speaker_cap
        if self.min_speakers is not None and high is not None and self.min_speakers > high \
                or self.max_speakers is not None and low is not None and self.max_speakers < low:
            raise ValueError(f"the speaker counts contradict each other: num_speakers={self.num_speakers}, "
                             f"min_speakers={self.min_speakers}, max_speakers={self.max_speakers}")

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
        windows: number of window embeddings in ``total``.
    """

    label: str
    total: np.ndarray
    seconds: float = 0.0
    windows: int = 0

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


def evidence_similarity(sum_a: np.ndarray, seconds_a: float, sum_b: np.ndarray, seconds_b: float,
                        window: float, share: float) -> float:
    """Cosine similarity of two mean embeddings, divided by what it is expected to be for one speaker.

    Model: a unit window embedding is its speaker's direction (energy ``share``) plus noise
    (energy ``1 - share``) that is independent between windows that do not overlap. The mean of
    windows covering ``s`` seconds then keeps a fraction ``g = sqrt(share / (share + (1 - share)
    / n))`` of its speaker's direction, with ``n = s / window`` independent windows, and two
    means of the same speaker have cosine similarity about ``g_a * g_b``. The ratio is about 1.0
    for the same speaker whatever the evidence, and below 1.0 for different speakers.

    Args:
        sum_a / sum_b: ``(d,)`` sums (or means) of unit window embeddings.
        seconds_a / seconds_b: seconds of audio the windows cover (at least one window).
        window: window length in seconds.
        share: mean cosine similarity of two windows of the same speaker
            (:attr:`DiarizerOptions.speaker_share`).

    Returns:
        The corrected similarity (float; not bounded by 1).
    """
    def kept(seconds: float) -> float:
        n = max(1.0, seconds / window)
        return float(np.sqrt(share / (share + (1.0 - share) / n)))

    return float(_unit(sum_a) @ _unit(sum_b)) / (kept(seconds_a) * kept(seconds_b))


def snap_to_word_gaps(changes: list[float], words: list[Word]) -> list[float]:
    """Move each change time (seconds) that falls among the words to the nearest gap between two
    words (the gap's midpoint). A change at or before the first word's start, or at or after the
    last word's end, stays where it is: the words keep their speaker, and the stretch without
    words beyond it goes to its own (a diarization review: such a change was moved onto the gap
    next to the first or last word, which then went to the other voice). A change inside the one
    word of a one-word utterance, or on the same time as another, is dropped.
    """
    if not words:
        return []
    gaps = np.array([(words[i].end + words[i + 1].start) / 2 for i in range(len(words) - 1)])
    snapped: list[float] = []
    for t in changes:
        if t <= words[0].start or t >= words[-1].end:
            g = float(t)
        elif len(gaps):
            g = float(gaps[int(np.argmin(np.abs(gaps - t)))])
        else:
            continue
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
        labels: where new speakers' labels come from: one :class:`~voicekit.turns.SpeakerLabels`
            shared by every diarizer of a meeting (a LiveKit room's room-microphone lanes) keeps
            their labels apart; by default this diarizer's own.

    Attributes:
        speakers: the :class:`SpeakerState` of every speaker opened so far, in order.
        history: per utterance, ``(utterance index, WindowEmbeddings)`` of the windows used,
            kept for offline refinement (256 float32 per window, 4 windows per second of
            speech: about 15 MB per hour of speech; 6.7-8.1 MiB per hour of meeting measured,
            docs/performance.md); only the last utterance's with
            ``DiarizerOptions.keep_history=False``.
    """

    def __init__(self, encoder: SpeakerEncoder, options: DiarizerOptions | None = None,
                 labels: SpeakerLabels | None = None) -> None:
        self.encoder = encoder
        self.opt = options or DiarizerOptions()
        self.labels = labels if labels is not None else SpeakerLabels()
        self.speakers: list[SpeakerState] = []
        self.history: list[tuple[int, WindowEmbeddings]] = []
        self._resumed: dict[str, SpeakerState] = {}  # the evidence resume() gave each stored speaker
        self._withheld: dict[str, SpeakerState] = {}  # the evidence of blocked turns (withhold)
        # the last utterance's index and the speaker (index into speakers) of each of its windows
        self._last_owners: tuple[int, np.ndarray] | None = None

    def resume(self, turns: Sequence[SpeakerTurn],
               embeddings: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = (),
               labels: Iterable[str] = ()) -> None:
        """Continue a stored meeting (``voicekit mic --append``), before the first :meth:`process`.

        New speakers are labelled after every "Speaker X" label of ``turns`` and ``labels``. With
        the stored meeting's kept window embeddings, each of its speakers is known from the first
        utterance: every window's evidence goes to the live speaker of the stored turn at the
        window's centre (or the nearest turn, as refinement does:
        :func:`~voicekit.diarization.refine.live_window_speakers`), so a voice that comes back
        keeps its label. That evidence is not this session's: :attr:`session_speakers` leaves it out.

        Args:
            turns: the stored meeting's committed turns (live labels).
            embeddings: its kept ``(starts, ends, vectors)`` per utterance
                (:meth:`voicekit.store.MeetingStore.embeddings`): ``(n,)`` float64 seconds,
                ``(n, 256)`` float32; empty when it kept none.
            labels: every other label its turns carry (refined:
                :meth:`voicekit.store.MeetingStore.speaker_labels`).

        Raises:
            RuntimeError: when this diarizer has already processed an utterance.
        """
        if self.speakers or self.history:
            raise RuntimeError("resume() comes before the first utterance")
        turns = [t for t in turns if t.words]
        diarized = [t for t in turns if speaker_index(t.speaker) is not None]
        kept = [(np.asarray(s) + np.asarray(e)) / 2 for s, e, _ in embeddings]
        if diarized and kept:
            centres = np.concatenate(kept)
            vectors = np.concatenate([v for _, _, v in embeddings]).astype(np.float64)
            order = list(dict.fromkeys(t.speaker for t in sorted(diarized, key=lambda t: t.start)))
            owner = live_window_speakers(diarized, centres)
            hop = self.encoder.hop_seconds
            for label in sorted(order, key=speaker_index):
                mask = owner == order.index(label)
                if mask.any():
                    n = int(mask.sum())
                    self.speakers.append(SpeakerState(label, vectors[mask].sum(axis=0), n * hop, n))
        # (the speakers are in label order; a label with no window is not known, but its letter
        # is never given again)
        self._resumed = {s.label: dataclasses.replace(s, total=s.total.copy()) for s in self.speakers}
        self.labels.reserve([*(t.speaker for t in turns), *labels])

    @property
    def session_speakers(self) -> list[SpeakerState]:
        """:attr:`speakers` with only this session's committed evidence: without what
        :meth:`resume` took from the stored meeting and what :meth:`withhold` kept out (a speaker
        left with none is left out); what a voice enrolled at the end of this session is built
        from."""
        out = []
        for s in self.speakers:
            state = s
            for taken in (self._resumed.get(s.label), self._withheld.get(s.label)):
                if taken is not None:
                    state = SpeakerState(s.label, state.total - taken.total, state.seconds - taken.seconds,
                                         state.windows - taken.windows)
            if state.windows > 0:
                out.append(state)
        return out

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
                state.windows += int(mask.sum())
                state.seconds += float(mask.sum()) * self.encoder.hop_seconds

    def _covered(self, windows: int) -> float:
        """Seconds of audio that ``windows`` consecutive windows cover."""
        return (max(windows, 1) - 1) * self.encoder.hop_seconds + self.encoder.window_seconds

    def _similarity(self, sum_a: np.ndarray, n_a: int, sum_b: np.ndarray, n_b: int) -> float:
        return evidence_similarity(sum_a, self._covered(n_a), sum_b, self._covered(n_b),
                                   self.encoder.window_seconds, self.opt.speaker_share)

    # --- decision -----------------------------------------------------------------------------
    def _segment(self, vectors: np.ndarray, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
        """Binary segmentation of windows ``lo:hi`` at the least alike split point, recursively,
        while the two sides are less alike than ``change_threshold``; appends ``(lo, hi)`` parts."""
        m = self.opt.min_segment_windows
        n = hi - lo
        best_k, best_sim = None, self.opt.change_threshold
        if n >= 2 * m:
            cum = np.cumsum(vectors[lo:hi], axis=0)
            for k in range(m, n - m + 1):
                sim = self._similarity(cum[k - 1], k, cum[-1] - cum[k - 1], n - k)
                if sim < best_sim:
                    best_k, best_sim = lo + k, sim
        if best_k is None:
            out.append((lo, hi))
        else:
            self._segment(vectors, lo, best_k, out)
            self._segment(vectors, best_k, hi, out)

    def _label_windows(self, vectors: np.ndarray) -> np.ndarray:
        """Speaker index for each window of a new utterance.

        The utterance is cut at speaker changes (:meth:`_segment`); each part, in time order, goes
        to the known speaker it is most alike (:func:`evidence_similarity` of the part's windows
        and the speaker's windows, those given to it earlier in this utterance included), or
        opens a new speaker when none reaches ``known_speaker_threshold`` (``floor_threshold``
        while fewer speakers than the minimum count are known) and the part is at least
        ``min_new_speaker_seconds`` long (always, for the first speaker of the meeting), never
        past the maximum count.
        """
        opt = self.opt
        cap = opt.speaker_cap
        vectors = vectors.astype(np.float64)
        parts: list[tuple[int, int]] = []
        self._segment(vectors, 0, len(vectors), parts)
        # evidence per speaker for this utterance's decisions: the emitted windows plus the parts
        # given to it so far in this utterance (added to the speaker's state in _remember)
        sums = [s.total.copy() for s in self.speakers]
        counts = [s.windows for s in self.speakers]
        labels = np.zeros(len(vectors), dtype=int)
        for lo, hi in parts:
            part_sum, n = vectors[lo:hi].sum(axis=0), hi - lo
            sims = [self._similarity(part_sum, n, total, count) if count else -np.inf
                    for total, count in zip(sums, counts)]
            best = int(np.argmax(sims)) if sims else -1
            at_cap = cap is not None and len(self.speakers) >= cap
            below_min = opt.speaker_floor is not None and len(self.speakers) < opt.speaker_floor
            long_enough = self._covered(n) >= opt.min_new_speaker_seconds - 1e-9
            threshold = opt.floor_threshold if below_min else opt.known_speaker_threshold
            unknown = long_enough and sims[best] < threshold if sims else True
            if not self.speakers or (not at_cap and unknown):
                # labelled by _forget_unused, once the utterance shows the speaker owns a piece
                self.speakers.append(SpeakerState("", np.zeros(vectors.shape[1])))
                sums.append(np.zeros(vectors.shape[1]))
                counts.append(0)
                best = len(self.speakers) - 1
            sums[best] = sums[best] + part_sum
            counts[best] += n
            labels[lo:hi] = best
        return labels

    def _forget_unused(self, known: int, owners: list[int]) -> None:
        """Drop the speakers opened in this utterance that own no piece (their change did not
        fall on a word gap) and label the others by first appearance with the next free labels
        (:attr:`labels`), rewriting ``owners``: a diarizer of its own gives "Speaker A, B, C…"
        without gaps; diarizers that share :attr:`labels` each take the next free one as they
        open a speaker."""
        kept = [i for i in dict.fromkeys(owners) if i >= known]
        remap = {old: known + new for new, old in enumerate(kept)}
        self.speakers = self.speakers[:known] + [self.speakers[i] for i in kept]
        for state in self.speakers[known:]:
            state.label = self.labels.take()
        owners[:] = [remap.get(i, i) for i in owners]

    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """Diarize one utterance.

        Args:
            utt: the utterance (audio and VAD frames).
            words: its words from STT, times in seconds.

        Returns:
            ``(words with .speaker set, pieces)``. Both are empty when the utterance has no words,
            or has under 0.2 s of audio (no embedding window) before any speaker was heard; such
            an utterance after one gives its words to the speaker heard last.

        When it raises (an interrupt, Ctrl-C, lands here too), :attr:`speakers` and
        :attr:`history` are left as they were, so that the utterance can be given again: run to
        its end twice, it would add the utterance's windows to the speakers twice.
        """
        n_history = len(self.history)
        speakers = [dataclasses.replace(s, total=s.total.copy()) for s in self.speakers]
        try:
            return self._process(utt, words)
        except BaseException:
            del self.history[n_history:]
            # labels the rolled-back utterance took go to the next new speaker: no gap in the letters
            before = {s.label for s in speakers}
            self.labels.give_back(s.label for s in self.speakers if s.label and s.label not in before)
            self.speakers = speakers
            raise

    def _process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        if not words:
            return [], []
        emb = self._speech_windows(utt, self.encoder.embed_windows(utt.samples, utt.start))
        if len(emb) == 0:
            # under 0.2 s of audio gives no window (a VAD set to open on shorter speech): its words
            # go to the speaker heard last, whose evidence stays as it was (a review: they were lost)
            last = self._last_owners
            if last is None or not len(last[1]):
                return [], []
            label = self.speakers[int(last[1][-1])].label
            return ([Word(w.start, w.end, w.text, w.probability, label) for w in words],
                    [Piece(utt.start, utt.end, label, 1.0)])
        if not self.opt.keep_history:
            self.history.clear()
        self.history.append((utt.index, emb))
        known = len(self.speakers)
        labels = self._label_windows(emb.vectors)
        centers = emb.centers
        changes = [float((centers[i - 1] + centers[i]) / 2) for i in range(1, len(labels)) if labels[i] != labels[i - 1]]
        bounds = [utt.start] + snap_to_word_gaps(changes, words) + [utt.end]
        spans, owners = [], []
        for a, b in zip(bounds[:-1], bounds[1:]):
            mask = (centers >= a) & (centers < b)
            if not mask.any():
                mask = np.abs(centers - (a + b) / 2) == np.min(np.abs(centers - (a + b) / 2))
            spans.append((a, b, mask))
            owners.append(int(np.bincount(labels[mask]).argmax()))
        # a stretch without words before the first or after the last (snap_to_word_gaps) keeps
        # its known speaker; a speaker it would open goes to its neighbour's: a label is opened
        # for words, never for a voice no word was heard of
        worded = [i for i, (a, b, _) in enumerate(spans) if any(a <= (w.start + w.end) / 2 < b for w in words)]
        for i in range(len(spans)):
            if worded and i not in worded and owners[i] >= known:
                owners[i] = owners[min(worded, key=lambda j: abs(j - i))]
        self._forget_unused(known, owners)
        pieces: list[Piece] = []
        for (a, b, mask), idx in zip(spans, owners):
            state = self.speakers[idx]
            vector = _unit(emb.vectors[mask].astype(np.float64).mean(axis=0))
            sim = float(vector @ state.centroid) if state.windows else 1.0
            if pieces and pieces[-1].speaker == state.label:
                prev = pieces.pop()
                pieces.append(Piece(prev.start, b, state.label, min(prev.similarity, sim)))
            else:
                pieces.append(Piece(a, b, state.label, sim))
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
        self._last_owners = (utt.index, emitted)
        return out, pieces

    def withhold(self, index: int, spans: Iterable[tuple[float, float]]) -> int:
        """Keep the speech of turns a hook blocked out of everything built after the meeting:
        every window of utterance ``index`` that holds any audio of one of ``spans`` leaves
        :attr:`history` (what ``--keep-embeddings`` stores and the refinement clusters) and no
        longer counts in :attr:`session_speakers` (what ``--enrol-voices`` builds a voiceprint
        from). The live decisions keep it in :attr:`speakers`: a voice keeps its label, and the
        name a hook gave it, whether or not one of its turns was blocked.

        Args:
            index: the utterance just given to :meth:`process` (an earlier one is left alone:
                its windows were stored already).
            spans: ``(start, end)`` seconds of the blocked turns, on the utterance's clock.

        Returns:
            the number of windows withheld (0 when called again for the same spans).
        """
        spans = list(spans)
        if not spans or self._last_owners is None or self._last_owners[0] != index \
                or not self.history or self.history[-1][0] != index:
            return 0
        emb, owners = self.history[-1][1], self._last_owners[1]
        drop = np.zeros(len(emb), dtype=bool)
        for a, b in spans:
            drop |= (emb.starts < b) & (emb.ends > a)
        if not drop.any():
            return 0
        hop = self.encoder.hop_seconds
        withheld = dict(self._withheld)
        for idx in np.unique(owners[drop]):
            mask = drop & (owners == idx)
            label = self.speakers[int(idx)].label
            gone = withheld.get(label) or SpeakerState(label, np.zeros(emb.vectors.shape[1]))
            withheld[label] = SpeakerState(label, gone.total + emb.vectors[mask].astype(np.float64).sum(axis=0),
                                           gone.seconds + float(mask.sum()) * hop, gone.windows + int(mask.sum()))
        kept = [] if drop.all() else [(index, emb.take(~drop))]
        last = None if drop.all() else (index, owners[~drop])
        # one statement, no call inside: an interrupt (Ctrl-C) finds all of it done or none
        self.history[-1:], self._withheld, self._last_owners = kept, withheld, last
        return int(drop.sum())
