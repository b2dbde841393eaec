"""Wire the stages: source -> VAD endpointer -> STT -> diarization -> speaker turns -> hooks ->
store -> sinks.

:class:`Components` holds the loaded models (slow to load, shared between runs);
:class:`Pipeline` runs one meeting through them. A replay, a paced replay and live capture all go
through :meth:`Pipeline.run`, which reads 16 kHz blocks from any iterable source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from voicekit.audio import SAMPLE_RATE
from voicekit.diarization.encoder import SpeakerEncoder
from voicekit.diarization.online import DiarizerOptions, OnlineDiarizer
from voicekit.diarization.refine import refine_turns
from voicekit.hooks import HookRunner
from voicekit.store import MeetingStore
from voicekit.stt import SttOptions, Transcriber
from voicekit.turns import SpeakerTurn, extend_to_speech, words_to_turns
from voicekit.vad import Endpointer, EndpointerOptions, Utterance, make_vad

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineOptions:
    """Every option of a pipeline run, in one record.

    Attributes:
        vad: ``"silero"`` (default: chosen by DER on ``../shared/eval``, see docs/accuracy.md) or
            ``"webrtc"`` / ``"webrtc:N"``.
        endpointer: :class:`~voicekit.vad.EndpointerOptions`.
        stt: :class:`~voicekit.stt.SttOptions`.
        diarizer: :class:`~voicekit.diarization.online.DiarizerOptions`.
        device: ``cpu`` or ``cuda`` for the speaker encoder (STT has its own in ``stt``).
        threads: CPU threads for the speaker encoder.
    """

    vad: str = "silero"
    endpointer: EndpointerOptions = field(default_factory=EndpointerOptions)
    stt: SttOptions = field(default_factory=SttOptions)
    diarizer: DiarizerOptions = field(default_factory=DiarizerOptions)
    device: str = "cpu"
    threads: int = 1


@dataclass
class Components:
    """The loaded models: the transcriber and the speaker encoder.

    Build with :meth:`load`; pass to several :class:`Pipeline` runs to load the models once.
    """

    transcriber: Transcriber
    encoder: SpeakerEncoder

    @classmethod
    def load(cls, options: PipelineOptions) -> "Components":
        """Load the models named in ``options``.

        Raises:
            voicekit.models.ModelError: when a model is missing or damaged.
        """
        return cls(Transcriber(options.stt), SpeakerEncoder(device=options.device, threads=options.threads))


@dataclass
class MeetingResult:
    """What a run produced.

    Attributes:
        turns: the committed turns (live labels), in emission order.
        refined: ``{turn_id: [refined label per word]}`` when refinement ran, else None.
        audio_seconds: seconds of audio consumed.
        speech_seconds: seconds the VAD marked as speech.
        processing_seconds: wall-clock seconds of the run (model loading excluded).
        stage_seconds: compute seconds per stage (``vad``, ``stt``, ``diarization``, ``commit``).
        blocked: number of turns a hook blocked.
    """

    turns: list[SpeakerTurn]
    refined: dict[int, list[str]] | None
    audio_seconds: float
    speech_seconds: float
    processing_seconds: float
    stage_seconds: dict[str, float]
    blocked: int = 0

    @property
    def rtf(self) -> float:
        """Real-time factor: processing seconds per second of audio."""
        return self.processing_seconds / self.audio_seconds if self.audio_seconds else 0.0

    @property
    def latencies(self) -> list[float]:
        """Turn latency of each turn: emitted_at minus the end of its last word, in seconds."""
        return [t.emitted_at - t.end for t in self.turns if t.emitted_at is not None]


class Pipeline:
    """One meeting through the stages.

    Args:
        options: :class:`PipelineOptions`.
        components: loaded models (:meth:`Components.load`); loaded here when None.
        hooks: the hook runner (persistent names, ``ON_TRANSCRIPTION`` hooks).
        store: the meeting store; turns are committed there one by one.
        on_turn: called with every committed turn (the live sinks: console lines, broadcaster).
        realtime_clock: stamp ``emitted_at`` from the wall clock (live capture, paced replay)
            instead of the audio clock plus measured processing time.
    """

    def __init__(self, options: PipelineOptions | None = None, components: Components | None = None,
                 hooks: HookRunner | None = None, store: MeetingStore | None = None,
                 on_turn: Callable[[SpeakerTurn], None] | None = None, realtime_clock: bool = False) -> None:
        self.options = options or PipelineOptions()
        self.components = components or Components.load(self.options)
        self.hooks = hooks or HookRunner()
        self.store = store
        self.on_turn = on_turn
        self.realtime_clock = realtime_clock
        self.endpointer = Endpointer(make_vad(self.options.vad), self.options.endpointer)
        self.diarizer = OnlineDiarizer(self.components.encoder, self.options.diarizer)
        self.turns: list[SpeakerTurn] = []
        self.blocked = 0
        self.stage_seconds = {"vad": 0.0, "stt": 0.0, "diarization": 0.0, "commit": 0.0}
        self._t0 = time.monotonic()

    def _handle(self, utt: Utterance) -> None:
        t = time.perf_counter()
        words = self.components.transcriber.transcribe(utt.samples, utt.start)
        t_stt = time.perf_counter()
        self.stage_seconds["stt"] += t_stt - t
        words, _pieces = self.diarizer.process(utt, words)
        t_diar = time.perf_counter()
        self.stage_seconds["diarization"] += t_diar - t_stt
        if self.realtime_clock:
            emitted = time.monotonic() - self._t0
        else:
            emitted = utt.closed_at + (t_diar - t)
        turns = words_to_turns(words, channel=self._channel, emitted_at=round(emitted, 3))
        for turn in extend_to_speech(turns, utt.speech_span):
            self._commit(turn)
        self.stage_seconds["commit"] += time.perf_counter() - t_diar

    def _commit(self, turn: SpeakerTurn) -> None:
        t = time.perf_counter()
        final = self.hooks.run(turn)
        if final is None:
            self.blocked += 1
            return
        if final.emitted_at is not None:
            # the turn goes out after its hooks: their time is part of the turn's latency
            final = final.replace(emitted_at=round(final.emitted_at + time.perf_counter() - t, 3))
        if self.store is not None:
            final = self.store.commit(final)
        self.turns.append(final)
        if self.on_turn is not None:
            try:
                self.on_turn(final)
            except Exception:  # noqa: BLE001 - a sink never stops the meeting
                log.exception("a turn sink failed; the turn is committed")

    def run(self, source: Iterable[np.ndarray], channel: str = "replay",
            progress: Callable[[float], None] | None = None, refine: bool = False) -> MeetingResult:
        """Run a stream through the pipeline until it ends (or raises KeyboardInterrupt).

        Args:
            source: ``(n,)`` float32 16 kHz blocks.
            channel: the turns' channel (``replay``, ``mic``…).
            progress: called with the seconds of audio consumed after each block.
            refine: after the stream, re-cluster the whole meeting (:func:`refine_turns`) and
                record the refined labels in the store.

        Returns:
            :class:`MeetingResult`. On KeyboardInterrupt the open utterance is finalised and
            committed before the interrupt propagates.
        """
        self._channel = channel
        self._t0 = time.monotonic()
        consumed = 0
        try:
            for block in source:
                t = time.perf_counter()
                closed = list(self.endpointer.push(block))
                self.stage_seconds["vad"] += time.perf_counter() - t
                for utt in closed:
                    self._handle(utt)
                consumed += len(block)
                if progress is not None:
                    progress(consumed / SAMPLE_RATE)
        finally:
            for utt in self.endpointer.flush():
                self._handle(utt)
        refined = None
        if refine:
            refined = self.refine()
        return MeetingResult(self.turns, refined, consumed / SAMPLE_RATE, self.endpointer.speech_seconds,
                             time.monotonic() - self._t0, dict(self.stage_seconds), self.blocked)

    def refine(self) -> dict[int, list[str]]:
        """Re-cluster the meeting so far; returns ``{turn_id: [label per word]}`` and records it
        in the store (live labels are kept beside it, never rewritten)."""
        d = self.options.diarizer
        turns = self.turns
        if any(t.turn_id is None for t in turns):
            turns = [t.replace(turn_id=i) for i, t in enumerate(turns)]
        refined = refine_turns(turns, [w for _, w in self.diarizer.history], d.num_speakers,
                               d.min_speakers, d.max_speakers)
        if self.store is not None:
            self.store.set_refined(refined)
        return refined
