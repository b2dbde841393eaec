"""Wire the stages: source -> VAD endpointer -> STT -> diarization -> speaker turns -> hooks ->
store -> sinks.

:class:`Components` holds the loaded models (slow to load, shared between runs);
:class:`Pipeline` runs one meeting through them. A replay, a paced replay and live capture all go
through :meth:`Pipeline.run`, which reads 16 kHz blocks from any iterable source.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np

from voicekit.audio import SAMPLE_RATE, PcmNormalizer, is_telephone_band, mono_block
from voicekit.crosstalk import CROSSTALK_DB, ChannelLevels
from voicekit.diarization.base import Diarizer
from voicekit.diarization.encoder import SpeakerEncoder
from voicekit.diarization.online import DiarizerOptions, OnlineDiarizer
from voicekit.diarization.refine import refine_turns
from voicekit.hooks import HookRunner
from voicekit.store import MeetingStore, StoreError
from voicekit.stt import SttOptions, Transcriber
from voicekit.turns import SpeakerLabels, SpeakerTurn, Word, channel_problem, extend_to_speech, words_to_turns
from voicekit.vad import Endpointer, EndpointerOptions, Utterance, make_vad
from voicekit.voiceprints import VoiceIdentifier

if TYPE_CHECKING:
    from voicekit.attribution import Participant
    from voicekit.diarization.pyannote_backend import PyannoteModels, PyannoteOptions

log = logging.getLogger(__name__)


class MeetingAborted(KeyboardInterrupt):
    """Stop the meeting now (the CLI raises it from its handler of a second Ctrl-C).

    Unlike a plain KeyboardInterrupt, after which :meth:`Pipeline.run` still commits every
    utterance heard, this ends the run at once: what was committed stays committed, the
    utterances still pending and the open one are not transcribed.
    """


@dataclass(frozen=True)
class PipelineOptions:
    """Every option of a pipeline run, in one record.

    Attributes:
        vad: ``"silero"`` (default: chosen by DER on ``../shared/eval``, see docs/accuracy.md) or
            ``"webrtc"`` / ``"webrtc:N"``.
        endpointer: :class:`~voicekit.vad.EndpointerOptions`.
        stt: :class:`~voicekit.stt.SttOptions`.
        diarizer: :class:`~voicekit.diarization.online.DiarizerOptions` (the speaker-count limits
            apply to every backend).
        pyannote: :class:`~voicekit.diarization.pyannote_backend.PyannoteOptions` to diarize with
            pyannote.audio instead of the embedded diarizer (None: embedded, the default).
        device: ``cpu`` or ``cuda`` for the torch models: the speaker encoder or pyannote (STT has
            its own in ``stt``).
        compute_type: ``--compute-type`` for the torch models (see :mod:`voicekit.devices`).
        threads: CPU threads for the speaker encoder / pyannote.
        keep_embeddings: keep each utterance's speaker embeddings in the store (opt-in: they can
            identify voices), so that ``voicekit export --refine`` can re-cluster the meeting later.
    """

    vad: str = "silero"
    endpointer: EndpointerOptions = field(default_factory=EndpointerOptions)
    stt: SttOptions = field(default_factory=SttOptions)
    diarizer: DiarizerOptions = field(default_factory=DiarizerOptions)
    pyannote: PyannoteOptions | None = None
    device: str = "cpu"
    compute_type: str = "default"
    threads: int = 1
    keep_embeddings: bool = False


@dataclass
class Components:
    """The loaded models: the transcriber and the speaker encoder, or pyannote's models instead of
    the encoder when ``options.pyannote`` is set.

    Build with :meth:`load`; pass to several :class:`Pipeline` runs to load the models once.
    """

    transcriber: Transcriber
    encoder: SpeakerEncoder | None
    pyannote: PyannoteModels | None = None

    @classmethod
    def load(cls, options: PipelineOptions) -> "Components":
        """Load the models named in ``options``.

        Raises:
            voicekit.models.ModelError: when a model is missing or damaged (or pyannote.audio is
                not installed, for ``options.pyannote``).
            voicekit.devices.DeviceError: when ``cuda`` is asked for and is not available.
        """
        transcriber = Transcriber(options.stt)
        if options.pyannote is not None:
            from voicekit.diarization.pyannote_backend import PyannoteModels

            return cls(transcriber, None, PyannoteModels(options.pyannote.source, options.device,
                                                         options.compute_type, options.threads))
        return cls(transcriber, SpeakerEncoder(device=options.device, threads=options.threads,
                                               compute_type=options.compute_type))


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
        utterance_latencies: per utterance that committed a turn, the seconds from the end of its
            speech (its last VAD speech frame) to the emission of its last turn.
        telephone_share: the share (0-1) of the transcribed utterances' seconds that were
            telephone-band audio (:func:`voicekit.audio.is_telephone_band`), where the speaker
            encoder hears voices as more alike (docs/accuracy.md).
    """

    turns: list[SpeakerTurn]
    refined: dict[int, list[str]] | None
    audio_seconds: float
    speech_seconds: float
    processing_seconds: float
    stage_seconds: dict[str, float]
    blocked: int = 0
    utterance_latencies: list[float] = field(default_factory=list)
    telephone_share: float = 0.0

    @property
    def rtf(self) -> float:
        """Real-time factor: processing seconds per second of audio."""
        return self.processing_seconds / self.audio_seconds if self.audio_seconds else 0.0

    @property
    def latencies(self) -> list[float]:
        """Turn latency of each turn: emitted_at minus the end of its last word, in seconds."""
        return [t.emitted_at - t.end for t in self.turns if t.emitted_at is not None]


@dataclass
class _Progress:
    """How far the pipeline got with the utterance at the head of its pending queue.

    Each stage's result is kept, so that after an interrupt (Ctrl-C) or an error the utterance
    is taken up where it stopped: STT (stateless) runs again only when it had not returned; the
    diarizer runs again only when it had not returned (it leaves its state as it was when it
    raises: :class:`~voicekit.diarization.base.Diarizer`), never once it has, since it learns
    from every utterance; and the turns already committed, or blocked by a hook, are not
    committed again (``done``).
    """

    utt: Utterance
    words: list[Word] | None = None      # STT's words
    language: str | None = None          # the language Whisper decoded them in (a multilingual model)
    diarized: list[Word] | None = None   # the words with their speakers
    turns: list[SpeakerTurn] | None = None
    done: int = 0       # turns of ``turns`` committed or blocked by a hook
    committed: int = 0  # of which committed
    handled_at: float = 0.0   # perf_counter when its handling (last) began: the estimated emitted_at


def _check_components(components: Components, options: PipelineOptions) -> None:
    """Raises ValueError when ``components`` were not loaded for ``options`` (a library trial:
    ``PipelineOptions(stt=SttOptions(model="base"))`` with tiny.en loaded ran tiny.en). A
    transcriber of the caller's own, with no ``options``, is taken as it is."""
    loaded = getattr(components.transcriber, "options", None)
    if isinstance(loaded, SttOptions) and loaded != options.stt:
        differ = ", ".join(f"{f.name}={getattr(options.stt, f.name)!r} (loaded: {getattr(loaded, f.name)!r})"
                           for f in fields(loaded) if getattr(loaded, f.name) != getattr(options.stt, f.name))
        raise ValueError(f"the components were loaded for other STT options than options.stt: {differ}; load "
                         "them for these options with Components.load(options), once, for every pipeline")
    if options.pyannote is not None and components.pyannote is None:
        raise ValueError("options.pyannote is set but the components hold no pyannote models: load them with "
                         "Components.load(options)")


class Pipeline:
    """One meeting through the stages.

    An utterance the endpointer closes waits in a pending queue until all its turns are committed
    (or blocked by a hook): an interrupt (KeyboardInterrupt: Ctrl-C) or an error while it is
    transcribed, diarized or committed leaves it there, and the next :meth:`push` or
    :meth:`finish` takes it up where it stopped (:class:`_Progress`), so that it is neither lost
    nor committed twice. :meth:`run` ends a stream that raised as :meth:`end_after` says.

    Args:
        options: :class:`PipelineOptions`.
        components: loaded models (:meth:`Components.load`); loaded here when None.
        hooks: the hook runner (persistent names, ``ON_TRANSCRIPTION`` hooks).
        store: the meeting store; turns are committed there one by one.
        on_turn: called with every committed turn, in order, on the thread that runs the
            pipeline (the live sinks: console lines, broadcaster); an exception it raises is
            logged and the turn stays committed.
        realtime_clock: stamp ``emitted_at`` from the wall clock (live capture, paced replay)
            instead of the audio clock plus measured processing time.
        voices: known voices (opt-in, docs/voiceprints.md): after each utterance the live
            speakers are compared with the library; a matched label is named like a hook rename
            (``sender_name``), its turns carry ``identity_id`` and are committed with the voice's
            registered participant record (attribution A4, A11). Labels the user or a hook named
            (``hooks.names``) are never renamed by the library.
        diarizer: the :class:`~voicekit.diarization.base.Diarizer` to use (e.g. a
            :class:`~voicekit.diarization.pyannote_backend.PyannoteOfflineDiarizer`); by default
            the embedded online diarizer, or pyannote's streaming diarizer when
            ``options.pyannote`` is set.
        labels: where the default diarizer's new speakers take their labels: one
            :class:`~voicekit.turns.SpeakerLabels` shared by several pipelines of a meeting (a
            LiveKit room's room-microphone lanes) keeps their "Speaker X" labels apart; by default
            the diarizer's own.
        resume: continue the meeting already in ``store`` (``voicekit mic --append``): the new
            audio's times go on from :meth:`~voicekit.store.MeetingStore.resume_point` (seconds
            after the stored audio), its utterances are numbered after the stored ones, new
            speakers are labelled after the stored ones (``Diarizer.resume``; with the stored
            meeting's kept embeddings its speakers are known voices from the first utterance), and
            the names a hook or the user gave them apply again (names given in ``hooks`` win; a
            name the voice library gave is given by ``voices`` again, with its identity).

    Raises:
        TypeError: ``options`` that is not a :class:`PipelineOptions` (a dict).
        ValueError: ``resume`` without a ``store``, or with a diarizer that has no ``resume()``;
            ``voices`` or ``options.keep_embeddings`` with a diarizer that keeps no speaker
            embeddings (pyannote's);
            no ``diarizer`` given with components that hold no speaker encoder (loaded for
            pyannote) and no ``options.pyannote``; ``components`` loaded for other options than
            these (another Whisper model or decoding option, pyannote asked for and not loaded):
            the components' models would run, not the options'.

    Attributes:
        turns: the committed turns, in commit order.
        consumed_seconds: seconds of audio given to the endpointer since :meth:`start`: on an
            interrupted run, what this session holds.
        start_time: meeting time in seconds of the stream's first sample (0 unless ``resume``).
        finished: :meth:`finish` ran to its end (False while an interrupt inside it left
            utterances uncommitted).
    """

    def __init__(self, options: PipelineOptions | None = None, components: Components | None = None,
                 hooks: HookRunner | None = None, store: MeetingStore | None = None,
                 on_turn: Callable[[SpeakerTurn], None] | None = None, realtime_clock: bool = False,
                 voices: VoiceIdentifier | None = None, diarizer: Diarizer | None = None,
                 labels: SpeakerLabels | None = None, resume: bool = False) -> None:
        if resume and store is None:
            raise ValueError("resume=True continues the meeting in a store: pass store")
        if options is not None and not isinstance(options, PipelineOptions):
            raise TypeError(f"Pipeline takes a PipelineOptions, not {type(options).__name__}: "
                            f"PipelineOptions(vad='silero', stt=SttOptions(…), diarizer=DiarizerOptions(…))")
        self.options = options or PipelineOptions()
        if components is not None:
            _check_components(components, self.options)
        self.components = components or Components.load(self.options)
        self.hooks = hooks or HookRunner()
        self.store = store
        self.on_turn = on_turn
        self.realtime_clock = realtime_clock
        self.voices = voices
        self.diarizer: Diarizer = diarizer or self._default_diarizer(labels)
        if not hasattr(self.diarizer, "speakers") and (voices is not None or self.options.keep_embeddings):
            # they would be ignored: no speaker is matched, no embedding is kept
            raise ValueError(f"voices and keep_embeddings need the speaker encoder's embeddings, which "
                             f"{type(self.diarizer).__name__} does not keep: use the embedded online diarizer")
        self.start_time, first_utterance = 0.0, 0
        self._resumed = resume
        if resume:
            if not hasattr(self.diarizer, "resume"):
                raise ValueError(f"{type(self.diarizer).__name__} cannot continue a stored meeting: it has "
                                 "no resume() (voicekit.diarization.base.Diarizer)")
            point = store.resume_point()
            self.start_time, first_utterance = point.start_time, point.next_utterance
            stored = store.turns()
            self.diarizer.resume(stored, store.embeddings(), store.speaker_labels())
            # the names a hook or the user gave apply again; a name the voice library gave is not
            # a rename: the library matches the resumed speaker again (with its identity, A11),
            # unless the user renamed the speaker after the meeting (`export --speaker-names`)
            voiced = {t.speaker for t in stored if t.metadata.get("identity_id")} - set(store.renamed_speakers())
            for label, name in store.speaker_names().items():
                if label in self.hooks.names or label in voiced:
                    continue
                try:
                    self.hooks.set_names({label: name})
                except ValueError as exc:   # stored by an older voicekit, which took it
                    log.warning("the stored name of %s is not used again: %s", label, exc)
        self.endpointer = Endpointer(make_vad(self.options.vad), self.options.endpointer,
                                     self.start_time, first_utterance)
        self.turns: list[SpeakerTurn] = []
        self.blocked = 0
        self.stage_seconds = {"vad": 0.0, "stt": 0.0, "diarization": 0.0, "commit": 0.0}
        self._t0 = time.monotonic()
        self._channel = "replay"
        self._started = False
        self._aborted = False
        self._saved_names: dict[str, str] = {}
        self._consumed = 0
        self._pcm = PcmNormalizer("the pushed audio")
        self.finished = False
        self.utterance_latencies: list[float] = []
        self._band_seconds = [0.0, 0.0]  # telephone-band, all: of the transcribed utterances
        self._pending: deque[Utterance] = deque()
        self._progress: _Progress | None = None
        self._failed: Utterance | None = None

    def _default_diarizer(self, labels: SpeakerLabels | None) -> Diarizer:
        if self.options.pyannote is not None and self.components.pyannote is not None:
            from voicekit.diarization.pyannote_backend import PyannoteStreamingDiarizer

            return PyannoteStreamingDiarizer(self.components.pyannote, self.options.pyannote, self.options.diarizer,
                                             labels)
        if self.components.encoder is None:
            raise ValueError("these components have no speaker encoder (loaded for pyannote): pass a diarizer")
        return OnlineDiarizer(self.components.encoder, self.options.diarizer, labels)

    @property
    def consumed_seconds(self) -> float:
        """Seconds of 16 kHz audio pushed since :meth:`start` (the session's audio so far)."""
        return self._consumed / SAMPLE_RATE

    @property
    def pending(self) -> int:
        """Utterances the endpointer closed whose turns are not all committed yet (not 0 only
        after an interrupt or an error, until the next :meth:`push` or :meth:`finish`)."""
        return len(self._pending)

    def abort(self) -> None:
        """Stop the stream from another thread (a second Ctrl-C of a LiveKit meeting): the
        utterance in hand is finished, then the pipeline's thread raises :class:`MeetingAborted`
        before the next one, also inside :meth:`finish`; the turns committed stay."""
        self._aborted = True

    def _drain(self) -> None:
        """Transcribe, diarize and commit the pending utterances, oldest first.

        Raises:
            MeetingAborted: after :meth:`abort`, before an utterance is taken up.
        """
        while self._pending:
            if self._aborted:
                raise MeetingAborted
            utt = self._pending[0]
            if self._progress is None or self._progress.utt is not utt:
                self._progress = _Progress(utt)
            try:
                self._handle(self._progress)
            except Exception:
                self._failed = utt  # an error, not an interrupt: see end_after
                raise
            self._pending.popleft()

    def _handle(self, p: _Progress) -> None:
        utt = p.utt
        t = p.handled_at = time.perf_counter()
        if p.words is None:
            p.words = self.components.transcriber.transcribe(utt.samples, utt.start, speech=utt.speech,
                                                             frame_seconds=utt.frame_seconds)
            p.language = getattr(self.components.transcriber, "last_language", None)
            if p.words:
                self._band_seconds[0] += utt.duration * is_telephone_band(utt.samples)
                self._band_seconds[1] += utt.duration
        t_stt = time.perf_counter()
        self.stage_seconds["stt"] += t_stt - t
        if p.diarized is None:
            p.diarized = self.diarizer.process(utt, p.words)[0]
        if p.turns is None:
            # what follows the diarizer may run twice after an interrupt: it is idempotent
            if self.voices is not None:
                for m in self.voices.update(getattr(self.diarizer, "speakers", ()), named=self.hooks.names):
                    log.info("%s is %s (voiceprint similarity %.3f after %.1f s of speech)",
                             m.label, m.voice.name, m.similarity, m.seconds)
            turns = words_to_turns(p.diarized, channel=self._channel, emitted_at=round(self._emitted_now(), 3))
            if p.language:
                turns = [t.replace(metadata={**t.metadata, "language": p.language}) for t in turns]
            # (a crosstalk turn bounds its neighbours' widening, then goes: SingleSpeaker)
            p.turns = [t for t in extend_to_speech(turns, utt.speech_span) if t.speaker != CROSSTALK_LABEL]
        t_diar = time.perf_counter()
        self.stage_seconds["diarization"] += t_diar - t_stt
        while p.done < len(p.turns):
            self._commit(p.turns[p.done])  # counts the turn in p.done once its fate is sealed
        self._keep_embeddings(p.utt)
        speech = utt.speech_span(utt.start, utt.end)
        if p.committed and speech is not None and self.turns[-1].emitted_at is not None:
            end = self._meeting_time(speech[1])
            self.utterance_latencies.append(round(float(self.turns[-1].emitted_at - end), 3))
        self.stage_seconds["commit"] += time.perf_counter() - t_diar

    def _keep_embeddings(self, utt) -> None:  # noqa: ANN001 - an Utterance
        """With ``keep_embeddings``: store the windows of ``utt`` the diarizer kept, once all its
        turns are committed or blocked (those of blocked turns are withheld by then). Idempotent
        (it runs again when an interrupt lands here)."""
        history = getattr(self.diarizer, "history", None)
        if self.options.keep_embeddings and self.store is not None and history and history[-1][0] == utt.index:
            emb = history[-1][1]
            self.store.add_embeddings(utt.index, emb.starts, emb.ends, emb.vectors)

    def _emitted_now(self) -> float:
        """``emitted_at`` for a turn that goes out now, meeting seconds: with ``realtime_clock`` the
        wall clock since the stream started; else (an unpaced replay) the estimate of a machine
        that keeps up: the utterance's close in audio time plus the time spent handling it."""
        if self.realtime_clock:
            return self.start_time + time.monotonic() - self._t0
        return self._progress.utt.closed_at + (time.perf_counter() - self._progress.handled_at)

    def _meeting_time(self, t: float) -> float:
        """Meeting time (s) of time ``t`` of this stream's clock: the same here (the endpointer
        counts from :attr:`start_time`); a LiveKit lane's clock starts at its first frame."""
        return t

    def _commit(self, turn: SpeakerTurn) -> None:
        """Hooks, store, sinks for one turn of the utterance at the head of the pending queue."""
        progress = self._progress
        if self.voices is not None:
            turn = turn.replace(metadata=self.voices.stamp(turn.metadata, turn.speaker))
        final = self.hooks.run(turn)
        if final is None:
            # its speech leaves what outlives the meeting (kept embeddings, a voiceprint, the
            # refinement) at once, before an abort could end the meeting with it in
            withhold = getattr(self.diarizer, "withhold", None)
            if withhold is not None:
                own = progress.turns[progress.done]   # on the utterance's clock (a lane shifts `turn`)
                withhold(progress.utt.index, [(own.start, own.end)])
            progress.done += 1
            self.blocked += 1
            return
        if self.voices is not None:
            final = self._check_identity(final)
        if final.emitted_at is not None:
            # the turn goes out now, after its hooks and the earlier turns of its utterance (their
            # hooks and commits): that time is part of its latency
            final = final.replace(emitted_at=round(self._emitted_now(), 3))
        if self.store is not None:
            final = self.store.commit(final, self.participants())
        self.turns.append(final)
        # committed: counted before the sinks, so that an interrupt inside one never commits it again
        progress.done += 1
        progress.committed += 1
        if self.on_turn is not None:
            try:
                self.on_turn(final)
            except Exception:  # noqa: BLE001 - a sink never stops the meeting
                log.exception("the on_turn callback failed; the turn is committed")
        self._save_names()

    def _save_names(self) -> None:
        """Store the persistent names as they change (a hook's rename for the speaker), so that a
        session resumed after a crash names the speaker again (``resume``); the turn is committed
        already, so a failure here is logged, not raised."""
        if self.store is None:
            return
        names = self.speaker_names()
        if names != self._saved_names:
            try:
                self.store.set_speaker_names(names)
                self._saved_names = names
            except Exception as exc:  # noqa: BLE001 - the turn is safe; the names are stored again at the end
                log.warning("the speakers' names could not be stored yet: %s", exc)

    def participants(self) -> tuple[Participant, ...]:
        """The meeting's registered participants, given to the store's author register with each
        turn (A11: they keep their bare names against look-alikes): the enrolled voices matched so
        far."""
        return tuple(self.voices.participants) if self.voices is not None else ()

    def _check_identity(self, turn: SpeakerTurn) -> SpeakerTurn:
        """A turn a hook renamed away from its voice's name no longer claims the voice's identity."""
        m = self.voices.matches.get(turn.speaker) if self.voices is not None else None
        if m is None or turn.sender_name == m.voice.name:
            return turn
        meta = {k: v for k, v in turn.metadata.items() if k not in ("identity_id", "voice_similarity")}
        return turn.replace(metadata=meta)

    def speaker_names(self) -> dict[str, str]:
        """Persistent names, label -> name: the voices the library matched, then ``hooks.names``
        (which win)."""
        voiced = {label: m.voice.name for label, m in self.voices.matches.items()} if self.voices else {}
        return {**voiced, **self.hooks.names}

    def run(self, source: Iterable[np.ndarray], channel: str = "replay",
            progress: Callable[[float], None] | None = None, refine: bool = False) -> MeetingResult:
        """Run a stream through the pipeline until it ends (or raises KeyboardInterrupt).

        Args:
            source: an iterable of ``(n,)`` mono blocks at 16 kHz, float32 in [-1, 1] (or integer
                PCM, see :meth:`push`): :class:`voicekit.sources.FileSource` for a recording
                (decoded, downmixed and resampled), :class:`voicekit.sources.LiveFeed` for a
                capture; blocks at another rate go through :class:`voicekit.audio.StreamResampler`
                first.
            channel: the turns' channel (``replay``, ``mic``…).
            progress: called with the seconds of audio consumed after each block.
            refine: after the stream, re-cluster the whole meeting (:func:`refine_turns`) and
                record the refined labels in the store.

        Returns:
            :class:`MeetingResult`.

        Raises:
            TypeError: ``source`` is a path (or other text), not audio blocks: the message names
                ``FileSource(path)``.
            KeyboardInterrupt, MeetingAborted, or the error of a stage: after :meth:`end_after`
            ended the stream as that exception asks.
        """
        if isinstance(source, (str, bytes, os.PathLike)):
            raise TypeError(f"Pipeline.run takes audio blocks, not a path ({source!r}): "
                            f"run(FileSource({str(source)!r})) decodes and resamples a recording "
                            "(from voicekit.sources import FileSource)")
        self.start(channel)
        try:
            for block in source:
                self.push(block)
                if progress is not None:
                    progress(self.consumed_seconds)
        except BaseException as exc:
            self.end_after(exc)
            raise
        try:
            self.finish()
        except Exception as exc:   # the last utterances' error: logged and the others committed, as above
            self.end_after(exc)    # (a KeyboardInterrupt here is the second Ctrl-C: it aborts)
            raise
        refined = None
        if refine:
            refined = self.refine()
        return self.result(refined)

    def start(self, channel: str = "replay") -> None:
        """Begin a stream fed with :meth:`push` (what :meth:`run` does for an iterable).

        Args:
            channel: the turns' channel id (:func:`voicekit.turns.channel_problem`): ``"replay"``,
                ``"mic"``, ``"room1/2"``.

        Raises:
            RuntimeError: when this pipeline already began a stream: a pipeline holds one
                meeting's state (its speakers, turns and clocks); make a new one, with
                ``resume=True`` and the meeting's store to go on with a stored meeting.
            ValueError: a channel that is not a channel id; or, without ``resume``, a store that
                already holds turns on this channel (a meeting run before): a second run would
                add a second copy of the meeting, with times and labels starting again.
        """
        problem = channel_problem(channel)
        if problem is not None:
            raise ValueError(problem)
        if self._started:
            raise RuntimeError("this Pipeline already ran a stream: make a new Pipeline for the next one "
                               "(resume=True with the meeting's store goes on with a stored meeting)")
        if self.store is not None and not self._resumed and self.store.has_turns(channel):
            raise ValueError(f"the meeting store {self.store.path} already holds turns on channel {channel!r} "
                             "(a meeting run before): pass resume=True to go on with that meeting, or give "
                             "a new store")
        self._started = True
        self._channel = channel
        self._t0 = time.monotonic()
        self._consumed = 0
        self.finished = False

    def push(self, block: np.ndarray) -> None:
        """Feed one ``(n,)`` mono 16 kHz block; every utterance it closes (and any left pending
        by an earlier interrupt) is transcribed, diarized and committed before this returns. The
        block counts in :attr:`consumed_seconds` as soon as the endpointer has it.

        float32 in [-1, 1] is used as it is; integer PCM (int16, int32, uint8) is scaled by its
        full scale, and NaN or out-of-range samples are fixed with a warning
        (:class:`~voicekit.audio.PcmNormalizer`, one per stream).

        The rate cannot be read from the samples: a block at another rate is taken as 16 kHz
        (48 kHz audio plays three times too slow, and Whisper hears no words in it). Resample
        first, one :class:`voicekit.audio.StreamResampler` per stream (``StreamResampler(48000,
        channels=2).process(block)``, then :func:`voicekit.audio.downmix` for stereo), as
        docs/capture.md shows.

        Raises:
            RuntimeError: before :meth:`start` (which sets the stream's channel and clock), or
                after :meth:`finish` ended the stream.
            ValueError: a block that is not one-dimensional (downmix first:
                :func:`voicekit.audio.downmix`); raw bytes (``np.frombuffer(data, np.int16)``
                reads 16-bit PCM).
            voicekit.audio.AudioError: a dtype that is not PCM audio (int64, complex, bool…).
            the error of a stage (a transcriber's, the store's): the utterance that raised it
                stays pending and raises again at the next push; end the stream with
                :meth:`end_after`, which drops it and commits the others.
        """
        if not self._started:   # pushed audio would be counted as "replay", then reset by start()
            raise RuntimeError("Pipeline.push before Pipeline.start: call start(channel) first (run() does both)")
        if self.finished:
            raise RuntimeError("Pipeline.push after Pipeline.finish: the stream has ended; a new Pipeline with "
                               "resume=True and the meeting's store goes on with the meeting")
        t = time.perf_counter()   # the VAD stage's clock counts the PCM normaliser too
        block = self._pcm(mono_block(block, "Pipeline.push"))
        self._consumed += len(block)
        # extend() queues each utterance as the endpointer yields it: an interrupt inside the VAD
        # keeps those closed before it
        self._pending.extend(self.endpointer.push(block))
        self.stage_seconds["vad"] += time.perf_counter() - t
        self._drain()

    def finish(self) -> None:
        """End of stream: commit the utterances still pending (an interrupt or an error stopped
        :meth:`push`), then the open one; sets :attr:`finished`. Safe to call again after an
        interrupt inside it.

        With a store whose meeting has no ``duration`` yet, or a shorter one, it becomes where
        this stream ended (:attr:`start_time` plus the seconds pushed): a session that goes on
        with the meeting (``resume=True``) starts there, not at the end of the last turn (a hook
        may have blocked the turns after it). A ``duration`` of None is left alone: the command
        line marks a meeting in progress so and stores the duration itself when the meeting
        ends. A store that cannot be read or written then is logged; the turns are committed
        already.

        Raises:
            RuntimeError: before :meth:`start`: there is no stream to end.
        """
        if not self._started:
            raise RuntimeError("Pipeline.finish before Pipeline.start: there is no stream to end "
                               "(start(channel), push(block)…, then finish(); run() does all three)")
        self._drain()
        self._pending.extend(self.endpointer.flush())
        self._drain()
        self.finished = True
        if self.store is not None:
            self._store_duration()

    def _store_duration(self) -> None:
        heard = round(self.start_time + self.consumed_seconds, 3)
        try:
            stored = self.store.meta().get("duration", 0.0)
            if isinstance(stored, (int, float)) and not isinstance(stored, bool) and stored < heard:
                self.store.set_meta(duration=heard)
        except (StoreError, sqlite3.Error) as exc:
            log.warning("the meeting's duration (%.3f s) was not stored: %s", heard, exc)

    def end_after(self, exc: BaseException) -> None:
        """End a stream that ``exc`` stopped, before it propagates (what :meth:`run` does).

        - :class:`MeetingAborted`: nothing more is transcribed; the turns committed stay.
        - any other KeyboardInterrupt: :meth:`finish`, so every utterance heard so far is
          committed, the interrupted one taken up where it stopped, the open one last.
        - an error (``Exception``): the utterance whose handling raised it is dropped, with a
          logged error (it would raise again), then :meth:`finish` commits the others; an error
          inside that is logged too and never replaces ``exc``.
        """
        if isinstance(exc, MeetingAborted):
            return
        if isinstance(exc, Exception):
            if self._pending and self._pending[0] is self._failed:
                utt = self._pending.popleft()
                progress, self._progress = self._progress, None
                # its turns may all be committed already: then what failed came after them
                # (its kept embeddings, an ops trial on a full disk), and they stay
                done = progress.committed if progress is not None and progress.utt is utt else 0
                if done:
                    total = len(progress.turns or ())
                    log.error("the utterance at %.2f-%.2f s was not fully committed (%d of its %d turn(s) committed, "
                              "kept): %s: %s", utt.start, utt.end, done, total, type(exc).__name__, exc)
                else:
                    log.error("the utterance at %.2f-%.2f s was not committed: %s: %s", utt.start, utt.end,
                              type(exc).__name__, exc)
            try:
                self.finish()
            except Exception as again:  # noqa: BLE001 - reported; the caller sees the first error
                # the caller reports the first error with its fix; the same kind of error again
                # (a full disk) adds nothing to it (--debug: the traceback)
                log.log(logging.DEBUG if type(again) is type(exc) else logging.ERROR,
                        "the stream could not be finished after %s: %s: %s", type(exc).__name__,
                        type(again).__name__, again, exc_info=log.isEnabledFor(logging.DEBUG))
            return
        self.finish()

    def result(self, refined: dict[int, list[str]] | None = None) -> MeetingResult:
        """What the stream produced so far (a copy of the turns: later pushes do not change it)."""
        return MeetingResult(list(self.turns), refined, self.consumed_seconds, self.endpointer.speech_seconds,
                             time.monotonic() - self._t0, dict(self.stage_seconds), self.blocked,
                             list(self.utterance_latencies),
                             self._band_seconds[0] / self._band_seconds[1] if self._band_seconds[1] else 0.0)

    def refine(self) -> dict[int, list[str]]:
        """Re-cluster the meeting so far; returns ``{turn_id: [label per word]}`` and records it
        in the store (live labels are kept beside it, never rewritten).

        The meeting's speaker count (``num_speakers`` / ``max_speakers``) caps the clustering's
        estimate; it is not forced on it: forced to each file's true count, the clustering split
        the main speaker of the AMI evaluation files (pooled refined DER 39.9 to 41.3 % against
        27.9 % capped, 27.9 % with no count; docs/accuracy.md, "With the true speaker count").
        ``voicekit export --refine --num-speakers N``, a re-clustering asked for by count, forces it.

        Raises:
            ValueError: the diarizer kept only the last utterance's windows
                (``DiarizerOptions.keep_history=False``, as ``voicekit mic`` and ``livekit`` run)."""
        d = self.options.diarizer
        if not d.keep_history:
            raise ValueError("this pipeline's diarizer kept only the last utterance's windows "
                             "(DiarizerOptions.keep_history=False): keep them to refine the meeting")
        turns = self.turns
        if any(t.turn_id is None for t in turns):
            turns = [t.replace(turn_id=i) for i, t in enumerate(turns)]
        refined = refine_turns(turns, [w for _, w in self.diarizer.history], max_speakers=d.speaker_cap)
        if self.store is not None:
            self.store.set_refined(refined)
        return refined


class SingleSpeaker:
    """Stands in for the diarizer on a one-person stream (a participant's track, one channel of
    a recording with one person per channel): every word is that person's.

    Args:
        label: the speaker of every word.
        crosstalk: called with a word's ``(start, end)`` in seconds; True drops the word as
            another person's speech that this person's microphone picked up
            (:meth:`voicekit.crosstalk.ChannelLevels.crosstalk`); None keeps every word. A dropped word is labelled
            :data:`CROSSTALK_LABEL`, so that the turns around it are not widened over it, and
            the pipeline drops its turn before the hooks.

    Attributes:
        crosstalk_words: how many words were dropped as crosstalk.
    """

    def __init__(self, label: str, crosstalk: Callable[[float, float], bool] | None = None) -> None:
        self.label = label
        self.history: list = []
        self.crosstalk = crosstalk
        self.crosstalk_words = 0

    def resume(self, turns, embeddings=(), labels=()) -> None:  # noqa: ANN001 - Diarizer.resume's signature
        """Nothing to continue: the label is fixed."""

    def process(self, utt, words):  # noqa: ANN001, ANN201 - OnlineDiarizer.process's signature
        labels = [CROSSTALK_LABEL if self.crosstalk is not None and self.crosstalk(w.start, w.end) else self.label
                  for w in words]
        self.crosstalk_words += labels.count(CROSSTALK_LABEL)
        return [dataclasses.replace(w, speaker=label) for w, label in zip(words, labels)], []


CROSSTALK_LABEL = "\x00crosstalk"
"""The speaker of a word :class:`SingleSpeaker` found to be another channel's speech: never a
label of a committed turn (:meth:`Pipeline` drops its turns), never a name anyone can give."""


def run_per_channel(source: Iterable[np.ndarray], n_channels: int, options: PipelineOptions | None = None,
                    components: Components | None = None, hooks: HookRunner | None = None,
                    store: MeetingStore | None = None, on_turn: Callable[[SpeakerTurn], None] | None = None,
                    channel: str = "replay", progress: Callable[[float], None] | None = None,
                    realtime_clock: bool = False, pipes: list[Pipeline] | None = None,
                    crosstalk_db: float | None = CROSSTALK_DB) -> MeetingResult:
    """A recording with one person per channel: each channel is a speaker, no diarization.

    Each channel runs through its own VAD, endpointer and STT (models shared); channel ``c``'s
    turns have the ``c``-th label of :class:`~voicekit.turns.SpeakerLabels` ("Speaker A", "Speaker B"…,
    none with an L or RN) and the channel ``<channel>/<c>``.
    The channels advance block by block together, so turns are committed in about time order.
    A word over which its channel is ``crosstalk_db`` quieter than another channel, whose
    loudness follows it as a copy's does, is that other person's speech on this microphone
    (:class:`voicekit.crosstalk.ChannelLevels`): it is dropped, and the run's count of such words is logged (a
    long-recordings trial: each person's words came out twice, once from their own channel and
    once from the other's bleed at -14 to -26 dB).

    Args:
        source: ``(n, n_channels)`` float32 16 kHz blocks (``iter_16k_blocks(per_channel=True)``).
        n_channels: the channel count.
        options, components, hooks, store, on_turn, realtime_clock: as :class:`Pipeline`.
        channel: prefix of the turns' channel names.
        progress: called with the seconds of audio consumed after each block.
        pipes: a list the channels' pipelines are appended to, to read their state when the run
            raises (``consumed_seconds``, ``finished``).
        crosstalk_db: :data:`voicekit.crosstalk.CROSSTALK_DB`; None keeps every word of every channel.

    Returns:
        One :class:`MeetingResult` for the meeting (every channel's turns, in commit order). On an
        interrupt or an error every channel's pipeline is ended by :meth:`Pipeline.end_after`
        before it propagates.

    Raises:
        ValueError: a block whose channel count is not ``n_channels``.
    """
    options = options or PipelineOptions()
    components = components or Components.load(options)
    hooks = hooks or HookRunner()
    turns: list[SpeakerTurn] = []

    def collect(turn: SpeakerTurn) -> None:
        turns.append(turn)
        if on_turn is not None:
            on_turn(turn)

    pipes = [] if pipes is None else pipes
    labels = SpeakerLabels()
    levels = ChannelLevels(n_channels, threshold_db=crosstalk_db) if crosstalk_db is not None else None
    for c in range(n_channels):
        pipe = Pipeline(options, components, hooks=hooks, store=store, on_turn=collect,
                        realtime_clock=realtime_clock)
        pipe.diarizer = SingleSpeaker(labels.take(),
                                      functools.partial(levels.crosstalk, c) if levels is not None else None)
        pipe.start(f"{channel}/{c}")
        pipes.append(pipe)
    t0 = time.monotonic()
    consumed = 0
    try:
        for block in source:
            block = np.asarray(block, dtype=np.float32)
            if block.ndim != 2 or block.shape[1] != n_channels:
                raise ValueError(f"expected (n, {n_channels}) blocks, got shape {block.shape}")
            if levels is not None:
                levels.push(block)
            for c, pipe in enumerate(pipes):
                pipe.push(block[:, c])
            consumed += len(block)
            if progress is not None:
                progress(consumed / SAMPLE_RATE)
    except BaseException as exc:
        for pipe in pipes:
            pipe.end_after(exc)
        raise
    for pipe in pipes:
        pipe.finish()
    dropped = sum(p.diarizer.crosstalk_words for p in pipes)
    if dropped:
        log.info("%d word(s) heard on a channel were louder on another channel (crosstalk) and were dropped", dropped)
    stages = {k: sum(p.stage_seconds[k] for p in pipes) for k in pipes[0].stage_seconds} if pipes else {}
    return MeetingResult(turns, None, consumed / SAMPLE_RATE, sum(p.endpointer.speech_seconds for p in pipes),
                         time.monotonic() - t0, stages, sum(p.blocked for p in pipes))
