"""Offline refinement: re-cluster a whole meeting's speaker embeddings with full context.

Clustering is spectral clustering on the cosine affinity of all window embeddings, with row-wise
top-p pruning, the symmetric normalised Laplacian and the eigengap heuristic for the number of
speakers (Ng, Jordan & Weiss, NIPS 2001; pruning and eigengap as in Park et al., "Auto-Tuning
Spectral Clustering for Speaker Diarization Using Normalized Maximum Eigengap", IEEE SPL 2019,
with a fixed pruning ratio instead of the NME search). Each turn then takes the cluster that
covers most of it, and the clusters are matched to the live labels (Hungarian assignment on
shared speech time) so that labels change only where the refinement disagrees.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.optimize import linear_sum_assignment

from voicekit.diarization.encoder import WindowEmbeddings
from voicekit.turns import SpeakerTurn, speaker_label


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
        k = int(np.argmax(gaps[lo - 1:max_k])) + lo if max_k >= lo else lo
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


def refine_turns(turns: Sequence[SpeakerTurn], windows: Sequence[WindowEmbeddings],
                 num_speakers: int | None = None, min_speakers: int | None = None,
                 max_speakers: int | None = None) -> dict[int, str]:
    """Re-cluster a meeting and give every turn a refined speaker label.

    Args:
        turns: the committed turns (with ``turn_id`` and their live ``speaker``).
        windows: every utterance's window embeddings, as the online diarizer kept them.
        num_speakers / min_speakers / max_speakers: speaker-count constraints.

    Returns:
        ``{turn_id: refined label}`` for every turn; labels reuse the live label of the speaker
        each cluster overlaps most, and a cluster with no live match gets the next free label.
    """
    if not turns or not windows:
        return {t.turn_id: t.speaker for t in turns}
    starts = np.concatenate([w.starts for w in windows])
    ends = np.concatenate([w.ends for w in windows])
    vectors = np.concatenate([w.vectors for w in windows])
    centers = (starts + ends) / 2
    clusters = spectral_clusters(vectors, num_speakers, min_speakers or 1, max_speakers or 8)

    turn_cluster: dict[int, int] = {}
    for t in turns:
        inside = (centers >= t.start) & (centers <= t.end)
        if inside.any():
            votes = np.bincount(clusters[inside])
            turn_cluster[t.turn_id] = int(np.argmax(votes))
        else:
            turn_cluster[t.turn_id] = int(clusters[int(np.argmin(np.abs(centers - (t.start + t.end) / 2)))])

    live_labels = sorted({t.speaker for t in turns}, key=lambda s: min(x.start for x in turns if x.speaker == s))
    n_clusters = int(clusters.max()) + 1
    overlap = np.zeros((n_clusters, len(live_labels)))
    index = {s: i for i, s in enumerate(live_labels)}
    for t in turns:
        overlap[turn_cluster[t.turn_id], index[t.speaker]] += t.end - t.start
    rows, cols = linear_sum_assignment(-overlap)
    name: dict[int, str] = {int(r): live_labels[c] for r, c in zip(rows, cols) if overlap[r, c] > 0}
    used = set(name.values())
    next_index = 0
    for cluster in range(n_clusters):
        if cluster not in name:
            while speaker_label(next_index) in used or speaker_label(next_index) in index:
                next_index += 1
            name[cluster] = speaker_label(next_index)
            used.add(name[cluster])
    return {tid: name[c] for tid, c in turn_cluster.items()}


def speaker_seconds(turns: Sequence[SpeakerTurn]) -> dict[str, float]:
    """Seconds of speech per speaker label."""
    out: dict[str, float] = defaultdict(float)
    for t in turns:
        out[t.speaker] += t.end - t.start
    return dict(out)
