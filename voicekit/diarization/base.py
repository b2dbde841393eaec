"""The interface every diarizer of the pipeline offers (the embedded online diarizer, the pyannote
backends, a one-speaker lane)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from voicekit.diarization.online import Piece
from voicekit.turns import SpeakerTurn, Word
from voicekit.vad import Utterance


class Diarizer(Protocol):
    """Gives each utterance's words a speaker label, one utterance at a time, as it closes.

    Attributes:
        history: per utterance, ``(utterance index, WindowEmbeddings)`` kept for offline
            refinement (:func:`voicekit.diarization.refine.refine_turns`); empty for diarizers
            whose embeddings refinement cannot use.

    A diarizer that keeps speaker evidence may also offer ``withhold(index, spans)``
    (:meth:`voicekit.diarization.online.OnlineDiarizer.withhold`): the pipeline calls it with the
    turns of the utterance just processed that a hook blocked.
    """

    history: list

    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """``(words with .speaker set, pieces)`` for one utterance; both empty without words.

        Labels are "Speaker A", "Speaker B"… in order of first appearance and never change once
        emitted. When it raises (a KeyboardInterrupt too), the diarizer's state is as it was
        before the call: the pipeline gives the same utterance again (never once it returned).
        """
        ...

    def resume(self, turns: Sequence[SpeakerTurn],
               embeddings: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]] = (),
               labels: Iterable[str] = ()) -> None:
        """Continue a stored meeting, before the first :meth:`process`: new speakers are labelled
        after every "Speaker X" label of ``turns`` and ``labels`` (the meeting's refined labels); a diarizer that can also knows the stored speakers from their kept ``(starts,
        ends, vectors)`` window embeddings
        (:meth:`voicekit.diarization.online.OnlineDiarizer.resume`)."""
        ...
