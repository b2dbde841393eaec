"""Offline refinement: re-cluster a whole meeting's speaker embeddings with full context.

Clustering is spectral clustering on the cosine affinity of all window embeddings, with row-wise
top-p pruning, the symmetric normalised Laplacian and the eigengap heuristic for the number of
speakers (Ng, Jordan & Weiss, NIPS 2001; pruning and eigengap as in Park et al., "Auto-Tuning
Spectral Clustering for Speaker Diarization Using Normalized Maximum Eigengap", IEEE SPL 2019,
with a fixed pruning ratio instead of the NME search). Each word then takes the cluster of the
windows that cover it, and the clusters are matched to the live labels (Hungarian assignment on
shared speech time) so that labels change only where the refinement disagrees.

A guard keeps the refinement from undoing what the live diarizer got right (measured on the 18
tuning recordings, pooled DER collar 0.5: live 31.3 %, plain re-clustering 32.9 %, guarded 29.3 %;
docs/accuracy.md): live speakers are kept apart (a cannot-link constraint, as in constrained
clustering, Wagstaff et al., ICML 2001). The eigengap tends to under-count on short meetings and
merges two live speakers into one cluster; such a cluster is split back along the live labels
unless the two speakers' mean embeddings inside it are alike (cosine >= ``MERGE_SIMILARITY``).
A refined speaker change inside a live turn then moves to a clause end nearby
(:func:`snap_to_clause_ends`), so the refined transcript is not cut mid-sentence (29.1 % on the
tuning files). A word is labelled by the windows inside its own live turn, since a window that
reaches across a turn boundary also hears the neighbouring speaker (28.5 %).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.optimize import linear_sum_assignment

from voicekit.diarization.encoder import WindowEmbeddings
from voicekit.turns import SpeakerTurn, free_labels


def spectral_clusters(vectors: np.ndarray, num_speakers: int | None = None, min_speakers: int = 1,
                      max_speakers: int = 8, prune: float = 0.3, seed: int = 0) -> np.ndarray:
    """Cluster L2-normalised embeddings.

    Args:
        vectors: ``(n, d)`` float32, unit norm.
        num_speakers: the number of clusters, when known.
        min_speakers / max_speakers: bounds for the eigengap estimate.
        prune: fraction of each row's affinities kept (the largest), default 0.3.
        seed: k-means seed (results are deterministic for a given seed).

    Returns:
        ``(n,)`` int cluster index per row, numbered in order of first appearance.
    """
    n = len(vectors)
    if n == 0:
        return np.zeros(0, dtype=int)
    if n < 4 or num_speakers == 1:
        return np.zeros(n, dtype=int)
    sim = np.clip(vectors @ vectors.T, 0.0, 1.0).astype(np.float64)
    keep = max(2, int(np.ceil(prune * n)))
    affinity = np.zeros_like(sim)
    top = np.argpartition(-sim, keep - 1, axis=1)[:, :keep]
    rows = np.arange(n)[:, None]
    affinity[rows, top] = sim[rows, top]
    affinity = (affinity + affinity.T) / 2
    degree = affinity.sum(axis=1)
    d = 1.0 / np.sqrt(np.maximum(degree, 1e-10))
    laplacian = np.eye(n) - d[:, None] * affinity * d[None, :]
    eigvals, eigvecs = np.linalg.eigh(laplacian)
    max_k = min(max_speakers, n - 1)
    if num_speakers:
        k = min(num_speakers, n)
    else:
        lo = max(1, min_speakers)
        gaps = np.diff(eigvals[: max_k + 1])
        k = int(np.argmax(gaps[lo - 1:max_k])) + lo if max_k >= lo else min(lo, n)   # k-means: k ≤ n points
    if k <= 1:
        return np.zeros(n, dtype=int)
    emb = eigvecs[:, :k]
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-10)
    rng = np.random.default_rng(seed)
    best, best_inertia = None, np.inf
    for _ in range(10):
        centroids, labels = kmeans2(emb, k, minit="++", seed=rng)
        inertia = float(((emb - centroids[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels, inertia
    order: dict[int, int] = {}
    for lab in best:
        order.setdefault(int(lab), len(order))
    return np.array([order[int(lab)] for lab in best])


MERGE_SIMILARITY = 0.88
"""Cosine between two live speakers' mean window embeddings above which one refined cluster may
merge them (a plateau from 0.85 to 0.90 on the tuning files; 1.0 would never merge them)."""

MIN_LIVE_WINDOWS = 8
"""Windows (2 s of speech at a 0.25 s hop) of a live speaker inside a cluster before that part
is kept apart from the cluster's main live speaker; fewer are too little evidence either way."""

SNAP_WORDS = 2
"""A refined speaker change inside a live turn moves to a clause end (a word ending in . ? ! , ;)
at most this many words away, when there is one: Whisper's punctuation marks where a sentence ends."""

MIN_NEW_WINDOWS = 12
"""Windows (3 s of speech at a 0.25 s hop) a refined cluster that matches no live speaker needs to
stand as a new speaker; a smaller one joins the matched cluster it is most alike. The eigengap of
a few dozen windows finds clusters inside one voice (a 4 s clip of one man: 4 clusters of about
1 s), and clusters of 8 and 9 windows that refinement opened on an AMI far-field meeting took
other speakers' words (its refined DER 27.6 % at 10-16 windows, 41.8 % at 9, 60.9 % at 8;
docs/accuracy.md). 12 is the middle of the 10-16 plateau on the tuning files."""

MAX_CLUSTERED = 3000
"""Most windows clustered at once: the affinity matrix is dense (n x n float64, 72 MB at 3000)
and its eigendecomposition O(n^3); a longer meeting (about 12 min of speech per 3000 windows)
clusters an evenly spread subset and gives every other window the cluster of the nearest
centroid."""


def _cluster_bounded(vectors: np.ndarray, num_speakers: int | None, min_speakers: int,
                     max_speakers: int) -> np.ndarray:
    n = len(vectors)
    if n <= MAX_CLUSTERED:
        return spectral_clusters(vectors, num_speakers, min_speakers, max_speakers)
    subset = np.linspace(0, n - 1, MAX_CLUSTERED).round().astype(int)
    labels = spectral_clusters(vectors[subset], num_speakers, min_speakers, max_speakers)
    centroids = np.stack([vectors[subset][labels == k].mean(axis=0) for k in range(int(labels.max()) + 1)])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-10)
    clusters = np.argmax(vectors @ centroids.T, axis=1)
    clusters[subset] = labels
    return clusters


def live_window_speakers(turns: Sequence[SpeakerTurn], centers: np.ndarray) -> np.ndarray:
    """The live speaker of every window: that of the turn whose span holds the window centre,
    else of the nearest turn.

    Args:
        turns: non-empty turns of one stream (not overlapping) with their live ``speaker``.
        centers: ``(n,)`` float64 window centre times in seconds.

    Returns:
        ``(n,)`` int: the index of each window's live speaker among the live labels in order of
        first appearance.
    """
    ordered = sorted(turns, key=lambda t: t.start)
    labels = list(dict.fromkeys(t.speaker for t in ordered))
    index = np.array([labels.index(t.speaker) for t in ordered])
    t_start = np.array([t.start for t in ordered])
    t_end = np.array([t.end for t in ordered])
    # turns of one stream do not overlap: the nearest span is the last one starting before the
    # centre or the next one
    before = np.clip(np.searchsorted(t_start, centers, side="right") - 1, 0, len(ordered) - 1)
    after = np.minimum(before + 1, len(ordered) - 1)

    def gap(k: np.ndarray) -> np.ndarray:
        return np.maximum(t_start[k] - centers, 0) + np.maximum(centers - t_end[k], 0)

    best = np.where(gap(after) < gap(before), after, before)
    return index[best]


def keep_live_speakers_apart(vectors: np.ndarray, clusters: np.ndarray, live: np.ndarray,
                             max_clusters: int, similarity: float = MERGE_SIMILARITY,
                             min_windows: int = MIN_LIVE_WINDOWS) -> np.ndarray:
    """Split a cluster back along the live labels where it merged unlike live speakers.

    In each cluster, the windows of every live speaker other than the cluster's main one (most
    windows) become a new cluster when they are at least ``min_windows`` and their mean
    embedding has cosine < ``similarity`` to the main speaker's mean embedding in the cluster;
    no split is made past ``max_clusters`` clusters.

    Args:
        vectors: ``(n, d)`` float32 unit-norm window embeddings.
        clusters: ``(n,)`` int cluster per window.
        live: ``(n,)`` int live speaker per window.
        max_clusters: the most clusters allowed (the speaker-count limit).
        similarity / min_windows: see ``MERGE_SIMILARITY`` and ``MIN_LIVE_WINDOWS``.

    Returns:
        ``(n,)`` int clusters, the new ones numbered after the existing ones.
    """
    out = clusters.copy()
    n_clusters = int(out.max()) + 1 if len(out) else 0
    for c in range(n_clusters):
        inside = clusters == c
        counts = np.bincount(live[inside], minlength=int(live.max()) + 1)
        parts = [int(s) for s in np.argsort(-counts, kind="stable") if counts[s] >= min_windows]
        if len(parts) < 2:
            continue
        main = vectors[inside & (live == parts[0])].mean(axis=0)
        main /= max(float(np.linalg.norm(main)), 1e-10)
        for s in parts[1:]:
            if n_clusters >= max_clusters:
                return out
            part = vectors[inside & (live == s)].mean(axis=0)
            if float(main @ part) / max(float(np.linalg.norm(part)), 1e-10) < similarity:
                out[inside & (live == s)] = n_clusters
                n_clusters += 1
    return out


def refine_turns(turns: Sequence[SpeakerTurn], windows: Sequence[WindowEmbeddings],
                 num_speakers: int | None = None, min_speakers: int | None = None,
                 max_speakers: int | None = None) -> dict[int, list[str]]:
    """Re-cluster a meeting and give every word a refined speaker label.

    Each word takes the majority cluster of the windows that cover its midpoint and lie inside
    its live turn (all windows that cover it when none lies inside; the nearest window when none
    covers it). Unless ``num_speakers`` is given, a cluster that merged unlike
    live speakers is split back (:func:`keep_live_speakers_apart`, up to ``max_speakers``). A
    cluster that matches no live speaker and holds fewer than ``MIN_NEW_WINDOWS`` windows joins
    the matched cluster most alike. Changes inside a turn move to a nearby clause end
    (:func:`snap_to_clause_ends`).

    Args:
        turns: the committed turns (with ``turn_id``, their live ``speaker`` and words).
        windows: every utterance's window embeddings, as the online diarizer kept them.
        num_speakers / min_speakers / max_speakers: speaker-count constraints for the
            clustering (None: automatic, at most 8 speakers). A cluster of under
            ``MIN_NEW_WINDOWS`` windows that matches no live speaker joins the most alike one,
            and a cluster left with no word disappears, so the result can hold fewer speakers
            than ``num_speakers``.

    Returns:
        ``{turn_id: [refined label per word]}``; labels reuse the live label of the speaker each
        cluster shares most speech with, and a cluster with no live match gets the next free label
        (:func:`voicekit.turns.free_labels`: never one with an L or RN).
    """
    if not turns or not windows:
        return {t.turn_id: [t.speaker] * len(t.words) for t in turns}
    starts = np.concatenate([w.starts for w in windows])
    ends = np.concatenate([w.ends for w in windows])
    vectors = np.concatenate([w.vectors for w in windows])
    centers = (starts + ends) / 2
    clusters = _cluster_bounded(vectors, num_speakers, min_speakers or 1, max_speakers or 8)
    if not num_speakers:
        live = live_window_speakers(turns, centers)
        clusters = keep_live_speakers_apart(vectors, clusters, live, max_speakers or 8,
                                            MERGE_SIMILARITY, MIN_LIVE_WINDOWS)
    live_labels = list(dict.fromkeys(t.speaker for t in sorted(turns, key=lambda x: x.start)))
    word_cluster, matched = _label_words(turns, starts, ends, clusters, live_labels)
    counts = np.bincount(clusters)
    small = [c for c in range(len(counts)) if c not in matched and 0 < counts[c] < MIN_NEW_WINDOWS]
    if small and matched:
        # a new speaker on fewer than MIN_NEW_WINDOWS windows (3 s): they join the matched cluster most alike
        kept = sorted(matched)
        means = {c: _unit_mean(vectors[clusters == c]) for c in kept + small}
        target = {c: kept[int(np.argmax([means[k] @ means[c] for k in kept]))] for c in small}
        clusters = np.array([target.get(int(c), int(c)) for c in clusters])
        word_cluster, matched = _label_words(turns, starts, ends, clusters, live_labels)
    name = dict(matched)
    free = free_labels(set(name.values()) | set(live_labels))
    for cluster in sorted({c for labels in word_cluster.values() for c in labels}):
        if cluster not in name:
            name[cluster] = next(free)
    return {t.turn_id: snap_to_clause_ends(t, [name[c] for c in word_cluster[t.turn_id]]) for t in turns}


def _unit_mean(vectors: np.ndarray) -> np.ndarray:
    m = vectors.mean(axis=0)
    return m / max(float(np.linalg.norm(m)), 1e-10)


def _label_words(turns: Sequence[SpeakerTurn], starts: np.ndarray, ends: np.ndarray, clusters: np.ndarray,
                 live_labels: list[str]) -> tuple[dict[int, list[int]], dict[int, str]]:
    """The cluster of every word (see :func:`refine_turns`), and the live label each cluster is
    matched to: the live speaker it shares most speech with, one cluster per live label
    (Hungarian assignment)."""
    centers = (starts + ends) / 2
    n_clusters = int(clusters.max()) + 1
    word_cluster: dict[int, list[int]] = {}
    for t in turns:
        labels = []
        # a window that reaches past the live turn also hears the neighbouring speaker
        inside = (starts >= t.start - 0.05) & (ends <= t.end + 0.05)
        for w in t.words:
            mid = (w.start + w.end) / 2
            cover = (starts <= mid) & (ends >= mid)
            if (cover & inside).any():
                cover &= inside
            if cover.any():
                labels.append(int(np.argmax(np.bincount(clusters[cover], minlength=n_clusters))))
            else:
                labels.append(int(clusters[int(np.argmin(np.abs(centers - mid)))]))
        word_cluster[t.turn_id] = labels
    index = {s: i for i, s in enumerate(live_labels)}
    overlap = np.zeros((n_clusters, len(live_labels)))
    for t in turns:
        for w, c in zip(t.words, word_cluster[t.turn_id]):
            overlap[c, index[t.speaker]] += max(w.end - w.start, 0.01)
    rows, cols = linear_sum_assignment(-overlap)
    matched = {int(r): live_labels[c] for r, c in zip(rows, cols) if overlap[r, c] > 0}
    return word_cluster, matched


def snap_to_clause_ends(turn: SpeakerTurn, labels: list[str], max_words: int | None = None) -> list[str]:
    """Move each change of label inside ``turn`` to the nearest clause end within ``max_words``.

    Args:
        turn: a turn with its words.
        labels: one label per word of ``turn``.
        max_words: how far a change may move (default ``SNAP_WORDS``).

    Returns:
        one label per word.
    """
    reach = SNAP_WORDS if max_words is None else max_words
    ends = [w.text.rstrip().endswith((".", "?", "!", ",", ";")) for w in turn.words]
    out = list(labels)
    for i in range(1, len(out)):
        if out[i] == out[i - 1] or ends[i - 1]:
            continue
        # the change falls between words i-1 and i; candidates: after word j (j in i-1±reach)
        for d in sorted(range(-reach, reach + 1), key=abs):
            j = i - 1 + d
            if d == 0 or not 0 <= j < len(out) - 1 or not ends[j]:
                continue
            if d < 0:      # end the earlier speaker sooner: words j+1..i-1 take the later label
                out[j + 1:i] = [out[i]] * (i - 1 - j)
            else:          # the earlier speaker keeps words i..j
                out[i:j + 1] = [out[i - 1]] * (j + 1 - i)
            break
    return out
