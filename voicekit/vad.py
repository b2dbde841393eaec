"""Voice activity detection and the endpointer that closes utterances.

Blocks of any size are re-buffered into the frames a VAD accepts (:class:`FrameBuffer`); a VAD
gives each frame a speech probability; the :class:`Endpointer` opens an utterance on speech and
closes it at the first silence longer than the hangover, or at the maximum length.

Two VADs:

- :class:`SileroVad`: Silero VAD v6 (ONNX, MIT), the model file that ships inside
  faster-whisper (``faster_whisper/assets/silero_vad_v6.onnx``), run frame by frame with its
  recurrent state carried across calls. 512-sample frames (32 ms) at 16 kHz.
- :class:`WebRtcVad`: the WebRTC VAD (``webrtcvad``, from the ``webrtcvad-wheels`` wheel),
  fed 16-bit mono frames of 10, 20 or 30 ms.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from voicekit.audio import SAMPLE_RATE


class FrameBuffer:
    """Re-buffer blocks of any size into frames of exactly ``frame_samples`` samples.

    Args:
        frame_samples: frame length in samples.

    Raises:
        ValueError: ``frame_samples`` is not positive.
    """

    def __init__(self, frame_samples: int) -> None:
        if frame_samples <= 0:
            raise ValueError(f"frame_samples must be positive, got {frame_samples}")
        self.frame_samples = frame_samples
        self._pending = np.zeros(0, dtype=np.float32)

    def push(self, block: np.ndarray) -> Iterator[np.ndarray]:
        """Add a ``(n,)`` float32 block; yield every complete ``(frame_samples,)`` frame.

        A frame leaves the buffer as it is yielded: when the consumer stops early (an interrupt
        inside the VAD), the frames not yet yielded come first from the next push or flush.
        """
        self._pending = np.concatenate([self._pending, np.asarray(block, dtype=np.float32).reshape(-1)])
        while len(self._pending) >= self.frame_samples:
            frame, self._pending = self._pending[:self.frame_samples], self._pending[self.frame_samples:]
            yield frame

    def flush(self) -> Iterator[np.ndarray]:
        """Yield the frames left, the last one zero-padded to a full frame (nothing if empty)."""
        yield from self.push(np.zeros(0, dtype=np.float32))
        if len(self._pending):
            frame = np.zeros(self.frame_samples, dtype=np.float32)
            frame[:len(self._pending)] = self._pending
            self._pending = np.zeros(0, dtype=np.float32)
            yield frame


class SileroVad:
    """Silero VAD v6, streaming.

    Call it on consecutive ``(512,)`` float32 frames at 16 kHz; it returns the speech
    probability in [0, 1] of each. Source: Silero VAD (snakers4/silero-vad, MIT), model file
    as shipped in faster-whisper.
    """

    frame_samples = 512
    _context_samples = 64

    def __init__(self) -> None:
        import os

        import onnxruntime   # its telemetry is off unless the user set it: voicekit/__init__.py
        from faster_whisper.utils import get_assets_path

        opts = onnxruntime.SessionOptions()
        opts.inter_op_num_threads = 1
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 4
        path = os.path.join(get_assets_path(), "silero_vad_v6.onnx")
        self._session = onnxruntime.InferenceSession(
            path, providers=["CPUExecutionProvider"], sess_options=opts)
        self.reset()

    def reset(self) -> None:
        """Forget the recurrent state (start of a new stream)."""
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context = np.zeros(self._context_samples, dtype=np.float32)

    def __call__(self, frame: np.ndarray) -> float:
        x = np.concatenate([self._context, frame]).reshape(1, -1).astype(np.float32)
        out, self._h, self._c = self._session.run(None, {"input": x, "h": self._h, "c": self._c})
        self._context = frame[-self._context_samples:]
        return float(out.reshape(-1)[0])


class WebRtcVad:
    """The WebRTC VAD on 30 ms frames: returns 1.0 for speech, 0.0 for non-speech.

    Args:
        aggressiveness: 0 (least) to 3 (most aggressive at rejecting non-speech).

    Raises:
        ValueError: ``aggressiveness`` outside 0-3.
    """

    frame_samples = 480  # 30 ms at 16 kHz: one of the legal 10/20/30 ms sizes

    def __init__(self, aggressiveness: int = 2) -> None:
        import webrtcvad

        if aggressiveness not in (0, 1, 2, 3):
            raise ValueError(f"webrtcvad aggressiveness must be 0-3, got {aggressiveness}")
        self._vad = webrtcvad.Vad(aggressiveness)

    def reset(self) -> None:
        """No state to forget."""

    def __call__(self, frame: np.ndarray) -> float:
        pcm = (np.clip(frame, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        return 1.0 if self._vad.is_speech(pcm, SAMPLE_RATE) else 0.0


def parse_vad_name(name: str) -> tuple[str, int | None]:
    """Check a VAD name: ``"silero"``, ``"webrtc"`` or ``"webrtc:N"`` (aggressiveness N in 0-3).

    Returns:
        ``("silero", None)`` or ``("webrtc", N)`` (N = 2 when not given).

    Raises:
        ValueError: for an unknown name or aggressiveness.
    """
    if name == "silero":
        return "silero", None
    kind, _, level = name.partition(":")
    if kind == "webrtc" and (not level or level in ("0", "1", "2", "3")):
        return "webrtc", int(level) if level else 2
    raise ValueError(f"unknown VAD {name!r}: use 'silero' or 'webrtc' (or 'webrtc:0'..'webrtc:3')")


def make_vad(name: str):
    """Build a VAD by name (:func:`parse_vad_name`).

    Raises:
        ValueError: for an unknown name.
    """
    kind, level = parse_vad_name(name)
    return SileroVad() if kind == "silero" else WebRtcVad(level)


NEG_THRESHOLD_MARGIN = 0.15
"""How far below the threshold a run of speech that opens an utterance may dip
(:attr:`EndpointerOptions.neg_threshold`): Silero's ``get_speech_timestamps`` default."""


@dataclass(frozen=True)
class EndpointerOptions:
    """Options of the endpointer (all durations in seconds).

    Attributes:
        threshold: speech probability at or above which a frame is speech (default 0.5,
            Silero's own; 0.3 finds more far-field meeting speech, lowering pooled DER on the
            evaluation files, but cost the acceptance file one word of WER: docs/accuracy.md).
        min_speech: speech shorter than this does not open an utterance (default 0.25).
        neg_threshold: once a frame at or above ``threshold`` starts a run of speech, frames at or
            above this probability go on with it toward ``min_speech`` (None: ``threshold - 0.15``,
            at least 0.01, as Silero's own ``get_speech_timestamps``: snakers4/silero-vad,
            ``utils_vad.py``; ``threshold`` itself: every frame of the run must reach it, as
            before 2026-12-04, when "ask", two 0.09 s bursts over 0.5 at the start of jfk.flac's
            second sentence, opened no utterance and was lost: docs/accuracy.md). Only the run that
            opens an utterance uses it: the silence that closes one is counted below ``threshold``.
        hangover: silence that closes an utterance (default 0.6).
        pad: audio kept before the first and after the last speech frame (default 0.2).
        max_utterance: an utterance is closed at this length even while speech goes on, at the
            least speech-like frame of its last third (default 10.0: a turn is out at most
            about 10 s after its speaker started).
        late_after: once an utterance is this long (seconds), a silence of ``late_hangover``
            closes it (None: the last third of ``max_utterance``, as the cut looks there).
        late_hangover: the silence that closes an utterance longer than ``late_after`` (None: the
            same as ``hangover``). A long utterance then ends at its first pause instead of
            being cut at ``max_utterance`` seconds up to a third of it back: the trailing-silence
            rule that shortens with the utterance's length, as Kaldi's endpointing rules do
            (``OnlineEndpointRule``, kaldi-asr ``online2/online-endpoint.h``).

    Raises:
        ValueError: a threshold outside (0, 1), a hangover or late hangover outside 0.05-5 s, a
            late hangover longer than the hangover (it would never act: the hangover closes the
            utterance first), a maximum length outside 1-30 s or a ``late_after`` outside 0 to
            the maximum length.
    """

    threshold: float = 0.5
    min_speech: float = 0.25
    neg_threshold: float | None = None
    hangover: float = 0.6
    pad: float = 0.2
    max_utterance: float = 10.0
    late_after: float | None = None
    late_hangover: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold is a speech probability between 0 and 1, got {self.threshold}")
        if self.neg_threshold is not None and not 0.0 < self.neg_threshold <= self.threshold:
            raise ValueError(f"neg_threshold goes on with a run of speech below the threshold: between 0 and the "
                             f"threshold ({self.threshold}), got {self.neg_threshold}")
        if not 0.05 <= self.hangover <= 5.0:
            raise ValueError(f"hangover is the silence in seconds that ends an utterance (0.05-5), got {self.hangover}")
        if not 1.0 <= self.max_utterance <= 30.0:
            raise ValueError(f"max_utterance must be between 1 and 30 seconds (Whisper hears 30 s at most), "
                             f"got {self.max_utterance}")
        if self.late_hangover is not None and not 0.05 <= self.late_hangover <= 5.0:
            raise ValueError(f"late_hangover is the silence in seconds that ends a long utterance (0.05-5), "
                             f"got {self.late_hangover}")
        if self.late_hangover is not None and self.late_hangover > self.hangover:
            raise ValueError(f"late_hangover ({self.late_hangover} s) must not be longer than the hangover "
                             f"({self.hangover} s): the hangover would close every utterance first; "
                             f"give a shorter late hangover or a longer hangover")
        if self.late_after is not None and not 0.0 <= self.late_after <= self.max_utterance:
            raise ValueError(f"late_after must be between 0 and max_utterance ({self.max_utterance} s), "
                             f"got {self.late_after}")


@dataclass
class Utterance:
    """Speech from its start to the first silence longer than the hangover.

    Attributes:
        index: 0-based number of the utterance in the meeting.
        start: start time in seconds from the start of the meeting.
        samples: ``(n,)`` float32 at 16 kHz, from ``start``.
        speech: per VAD frame, whether it was speech, ``(n_frames,)`` bool.
        frame_seconds: duration of one VAD frame in seconds.
        closed_at: meeting time in seconds when the endpointer closed it.
    """

    index: int
    start: float
    samples: np.ndarray
    speech: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    frame_seconds: float = 0.032
    closed_at: float = 0.0

    @property
    def end(self) -> float:
        """End time in seconds."""
        return self.start + len(self.samples) / SAMPLE_RATE

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.samples) / SAMPLE_RATE

    def speech_span(self, lo: float, hi: float) -> tuple[float, float] | None:
        """First and last speech time (seconds) of the VAD frames inside ``[lo, hi]``, or None."""
        lo, hi = max(lo, self.start), min(hi, self.end)
        a = max(0, int(np.floor((lo - self.start) / self.frame_seconds)))
        b = min(len(self.speech), int(np.ceil((hi - self.start) / self.frame_seconds)))
        idx = np.flatnonzero(self.speech[a:b])
        if len(idx) == 0:
            return None
        return (max(lo, self.start + (a + idx[0]) * self.frame_seconds),
                min(hi, self.start + (a + idx[-1] + 1) * self.frame_seconds))


class Endpointer:
    """Turn a stream of 16 kHz blocks into utterances.

    Args:
        vad: a VAD (:class:`SileroVad`, :class:`WebRtcVad`): a callable on
            ``(vad.frame_samples,)`` float32 frames returning a speech probability.
        options: :class:`EndpointerOptions`.
        start_time: meeting time in seconds of the stream's first sample (0 for a new meeting; the
            end of the stored audio for a resumed one, ``voicekit mic --append``).
        first_index: :attr:`Utterance.index` of the stream's first utterance (the utterances of a
            resumed meeting go on numbering after the stored ones).

    Raises:
        ValueError: a negative ``start_time`` or ``first_index``.
    """

    def __init__(self, vad, options: EndpointerOptions | None = None, start_time: float = 0.0,
                 first_index: int = 0) -> None:
        if start_time < 0 or first_index < 0:
            raise ValueError(f"start_time and first_index must be >= 0, got {start_time} and {first_index}")
        self.vad = vad
        self.start_time = float(start_time)
        self.opt = options or EndpointerOptions()
        self.frames = FrameBuffer(vad.frame_samples)
        self.frame_seconds = vad.frame_samples / SAMPLE_RATE
        fs = self.frame_seconds
        neg = self.opt.neg_threshold
        self._neg_threshold = max(self.opt.threshold - NEG_THRESHOLD_MARGIN, 0.01) if neg is None else neg
        self._pad_frames = max(0, round(self.opt.pad / fs))
        self._min_speech_frames = max(1, round(self.opt.min_speech / fs))
        self._hangover_frames = max(1, round(self.opt.hangover / fs))
        self._max_frames = max(1, round(self.opt.max_utterance / fs))
        late_after = self.opt.max_utterance * 2 / 3 if self.opt.late_after is None else self.opt.late_after
        self._late_frames = max(1, round(late_after / fs))
        late_hangover = self.opt.hangover if self.opt.late_hangover is None else self.opt.late_hangover
        self._late_hangover_frames = max(1, round(late_hangover / fs))
        self._history: deque[tuple[np.ndarray, float]] = deque(maxlen=self._pad_frames + self._min_speech_frames)
        self._frame_index = 0  # frames seen so far
        self._active: list[tuple[np.ndarray, float]] | None = None
        self._active_start_frame = 0
        self._silence_run = 0
        self._speech_run = 0
        self._count = first_index
        self._samples_in = 0
        self.speech_seconds = 0.0

    @property
    def position(self) -> float:
        """Meeting time in seconds of the end of the audio consumed so far."""
        return self.start_time + self._frame_index * self.frame_seconds

    def push(self, block: np.ndarray) -> Iterator[Utterance]:
        """Feed a ``(n,)`` float32 16 kHz block; yield each utterance it closes."""
        self._samples_in += len(block)
        for frame in self.frames.push(block):
            yield from self._frame(frame)

    def flush(self) -> Iterator[Utterance]:
        """End of stream: yield the open utterance, if any."""
        for frame in self.frames.flush():
            yield from self._frame(frame)
        if self._active is not None:
            yield self._close(len(self._active) - max(0, self._silence_run - self._pad_frames))

    def _run_after(self, run: int, prob: float) -> int:
        """The length in frames of the run of speech that may open an utterance, after a frame of
        speech probability ``prob``: a frame over the threshold starts or extends it, one over
        ``neg_threshold`` extends it, any other ends it."""
        return run + 1 if prob >= self.opt.threshold or (run > 0 and prob >= self._neg_threshold) else 0

    def _frame(self, frame: np.ndarray) -> Iterator[Utterance]:
        prob = float(self.vad(frame))
        is_speech = prob >= self.opt.threshold
        self._frame_index += 1
        if is_speech:
            self.speech_seconds += self.frame_seconds
        if self._active is None:
            self._history.append((frame, prob))
            self._speech_run = self._run_after(self._speech_run, prob)
            if self._speech_run >= self._min_speech_frames:
                self._active = list(self._history)
                self._active_start_frame = self._frame_index - len(self._active)
                self._history.clear()
                self._silence_run = 0
                self._speech_run = 0
            return
        self._active.append((frame, prob))
        self._silence_run = 0 if is_speech else self._silence_run + 1
        if self._silence_run >= self._hangover_frames or (
                len(self._active) >= self._late_frames and self._silence_run >= self._late_hangover_frames):
            yield self._close(len(self._active) - max(0, self._silence_run - self._pad_frames))
        elif len(self._active) >= self._max_frames:
            # cut in the deepest pause of the last third (speech probability averaged over
            # ~160 ms, so a one-frame dip inside a word does not count), not in mid-word
            probs = np.array([p for _, p in self._active])
            width = max(1, round(0.16 / self.frame_seconds))
            smooth = np.convolve(probs, np.ones(width) / width, mode="same")
            lo = len(probs) * 2 // 3
            yield self._close(lo + int(np.argmin(smooth[lo:])) + 1)

    def _close(self, keep: int | None = None) -> Utterance:
        """Close the open utterance after its first ``keep`` frames (all when None); the frames
        after the cut go back to the look-back buffer and may open the next utterance."""
        frames = self._active or []
        keep = len(frames) if keep is None else keep
        frames, tail = frames[:keep], frames[keep:]
        start = self.start_time + self._active_start_frame * self.frame_seconds
        samples = np.concatenate([f for f, _ in frames]) if frames else np.zeros(0, np.float32)
        # the last frame of a stream is zero-padded: never reach past the audio received
        samples = samples[: max(0, self._samples_in - self._active_start_frame * self.vad.frame_samples)]
        utt = Utterance(
            index=self._count,
            start=start,
            samples=samples,
            speech=np.array([p >= self.opt.threshold for _, p in frames], dtype=bool),
            frame_seconds=self.frame_seconds,
            closed_at=self.position,
        )
        self._count += 1
        self._active = None
        self._silence_run = 0
        self._history.clear()
        run = best = 0
        for _, p in tail:
            run = self._run_after(run, p)
            best = max(best, run)
        if best >= self._min_speech_frames:
            # speech after a cut at the maximum length opens the next utterance at once, whether or
            # not its last frame is speech (a streaming review: a frame under the threshold at the
            # moment of the cut left up to 3 s of speech in no utterance)
            self._active = list(tail)
            self._active_start_frame = self._frame_index - len(tail)
            self._speech_run = 0
            while self._silence_run < len(tail) and tail[-1 - self._silence_run][1] < self.opt.threshold:
                self._silence_run += 1   # the pause it ends on counts toward the hangover
        else:
            for item in tail[-self._history.maxlen:]:
                self._history.append(item)
            run = 0
            for _, p in self._history:
                run = self._run_after(run, p)
            self._speech_run = run
        return utt
