"""The interface every diarizer of the pipeline offers (the embedded online diarizer, the pyannote
backends, a one-speaker lane)."""

from __future__ import annotations

from typing import Protocol

from voicekit.diarization.online import Piece
from voicekit.turns import Word
from voicekit.vad import Utterance


class Diarizer(Protocol):
    """Gives each utterance's words a speaker label, one utterance at a time, as it closes.

    Attributes:
        history: per utterance, ``(utterance index, WindowEmbeddings)`` kept for offline
            refinement (:func:`voicekit.diarization.refine.refine_turns`); empty for diarizers
            whose embeddings refinement cannot use.
    """

    history: list

    def process(self, utt: Utterance, words: list[Word]) -> tuple[list[Word], list[Piece]]:
        """``(words with .speaker set, pieces)`` for one utterance; both empty without words.

        Labels are "Speaker A", "Speaker B"… in order of first appearance and never change once
        emitted. When it raises (a KeyboardInterrupt too), the diarizer's state is as it was
        before the call: the pipeline gives the same utterance again (never once it returned).
        """
        ...
