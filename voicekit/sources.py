"""Audio sources: where 16 kHz mono blocks come from.

A source is an iterable of ``(n,)`` float32 blocks at 16 kHz with a ``channel`` name and a
``duration`` (seconds, or None for a live stream). :class:`FileSource` replays a recording, as
fast as the pipeline goes or paced at 1x (``realtime=True``); paced replay goes through
:class:`LiveFeed`, the bounded queue that live capture fills from its audio thread, so a paced
replay and a microphone run the same code.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicekit._checks import is_finite_real
from voicekit.audio import SAMPLE_RATE, AudioError, RawPcm, iter_16k_blocks, mono_block, probe

log = logging.getLogger(__name__)


class LiveFeed:
    """A bounded queue between an audio producer (a capture callback, a paced replay) and the
    pipeline, which reads it from another thread.

    The producer calls :meth:`push` (never blocks) and :meth:`close`; the consumer iterates.
    When the queue already holds ``max_seconds`` of audio, a pushed block is dropped and counted
    in :attr:`overflows` and :attr:`dropped_seconds`, and the consumer reads silence of its
    length in its place (before the next block kept), so the turns after a loss keep their times
    in the meeting. :meth:`abort` (any thread) ends the consumer's iteration at once with
    :class:`voicekit.pipeline.MeetingAborted`, what is still queued unread.

    Args:
        max_seconds: capacity of the queue in seconds of 16 kHz audio, whatever the blocks'
            length.

    Raises:
        ValueError: ``max_seconds`` is not a positive finite number of seconds.
    """

    def __init__(self, max_seconds: float = 30.0) -> None:
        if not (is_finite_real(max_seconds) and max_seconds > 0):
            raise ValueError(f"max_seconds must be a positive number of seconds, got {max_seconds!r}")
        self.max_seconds = float(max_seconds)
        # blocks, None (the end) or an int: that many samples of silence for dropped blocks
        self._queue: queue.SimpleQueue[np.ndarray | int | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0   # samples queued and not read yet
        self._gap = 0      # samples dropped since the last block queued
        self.overflows = 0
        self.dropped_seconds = 0.0
        self.aborted = False

    def push(self, block: np.ndarray) -> None:
        """Queue one ``(n,)`` 16 kHz block (float32, or integer PCM as
        :meth:`voicekit.pipeline.Pipeline.push` takes it); drop and count it when the queue is
        full.

        Raises:
            ValueError: raw bytes, or a block that is not one-dimensional
                (:func:`voicekit.audio.mono_block`), raised here, in the producer's thread.
        """
        block = mono_block(block, "LiveFeed.push")
        n = len(block)
        with self._lock:
            if self._queued and self._queued + n > self.max_seconds * SAMPLE_RATE:
                self._gap += n
                self.overflows += 1
                self.dropped_seconds += n / SAMPLE_RATE
                overflows, dropped = self.overflows, self.dropped_seconds
            else:
                if self._gap:
                    self._queue.put(self._gap)
                    self._gap = 0
                self._queued += n
                self._queue.put(block)
                return
        if overflows in (1, 10, 100) or overflows % 1000 == 0:
            log.warning("audio queue full: %d blocks (%.1f s) dropped so far and read as silence; processing "
                        "is slower than real time", overflows, dropped)

    def close(self) -> None:
        """Mark the end of the stream (after the silence of blocks dropped last, if any)."""
        with self._lock:
            if self._gap:
                self._queue.put(self._gap)
                self._gap = 0
        self._queue.put(None)

    def abort(self) -> None:
        """End the stream now: the consumer's next read raises MeetingAborted (a second Ctrl-C)."""
        self.aborted = True
        self._queue.put(None)   # wake a consumer waiting on an empty queue

    def __iter__(self) -> Iterator[np.ndarray]:
        while True:
            block = None if self.aborted else self._queue.get()
            if self.aborted:
                from voicekit.pipeline import MeetingAborted

                raise MeetingAborted
            if block is None:
                return
            if isinstance(block, int):   # dropped audio: its length of silence, in blocks of 1 s at most
                for start in range(0, block, SAMPLE_RATE):
                    yield np.zeros(min(SAMPLE_RATE, block - start), np.float32)
                continue
            with self._lock:
                self._queued -= len(block)
            yield block


# a recording that decodes to this much less than its header declares is truncated (a length
# FFmpeg only estimates from the bitrate, AudioInfo.estimated, is never compared; the margin covers
# the decoders' rounding: the 32 recordings of ../shared/eval decode to within 1e-12 s of theirs)
TRUNCATION_MARGIN_SECONDS = 0.5
TRUNCATION_MARGIN_SHARE = 0.02


@dataclass(frozen=True)
class Truncation:
    """A recording that holds less audio than its header declares.

    Attributes:
        held: seconds of audio the file gave (what was transcribed).
        declared: seconds its header declares.
        reason: the decoder's error where it broke off mid-stream (a FLAC that lost sync); None
            when the audio just ends early (a WAV or MP3 cut short).
    """

    held: float
    declared: float
    reason: str | None = None


def _check_block_seconds(block_seconds: float) -> None:
    if not (is_finite_real(block_seconds) and block_seconds > 0):
        raise ValueError(f"block_seconds must be a positive number of seconds (0.1 is the default), "
                         f"got {block_seconds!r}")


class FileSource:
    """Replay a recording as 16 kHz mono blocks.

    Args:
        path: the recording (any format :mod:`voicekit.audio` decodes).
        block_seconds: block length in seconds (default 0.1).
        realtime: pace the blocks at 1x speed through a :class:`LiveFeed`, exactly as live
            capture delivers them.
        channel: 0-based channel to keep instead of the downmix.
        per_channel: yield ``(n, n_channels)`` blocks, every channel kept (one person per
            channel: :func:`voicekit.pipeline.run_per_channel`).
        raw: read the file as headerless PCM of this format.

    Raises:
        ValueError: ``block_seconds`` is not a positive finite number of seconds.
        voicekit.audio.AudioError: when the file cannot be read (raised at construction), or
            when decoding fails before any audio came out of it (while iterating).

    Attributes:
        decoded_seconds: seconds of audio given so far.
        truncated: a :class:`Truncation` when the file holds less than its header declares:
            known at construction for a WAV, at the end of the iteration for other formats. A
            file whose decoder fails mid-stream ends the iteration there (the audio before it is
            given, never lost) and is truncated with the decoder's reason.
    """

    def __init__(self, path: str | Path, block_seconds: float = 0.1, realtime: bool = False,
                 channel: int | None = None, per_channel: bool = False, raw: RawPcm | None = None) -> None:
        _check_block_seconds(block_seconds)
        self.path = Path(path)
        self.raw = raw
        self.per_channel = per_channel
        self.info = probe(self.path, raw)
        self.decoded_seconds = 0.0
        self.truncated: Truncation | None = None
        if self.info.declared_duration is not None:
            self.truncated = Truncation(self.info.duration, self.info.declared_duration)
            log.warning("%s is truncated: its header declares %.1f s but it holds %.1f s; the %.1f s "
                        "present are processed", self.path, self.info.declared_duration, self.info.duration,
                        self.info.duration)
        if self.info.other_tracks:
            log.warning("%s holds %d audio tracks: track 1 (%s, %d ch, %d Hz) is transcribed, not %s; to "
                        "transcribe another, extract it first (ffmpeg -i IN -map 0:a:1 -ar 16000 OUT.wav takes "
                        "track 2)", self.path, 1 + len(self.info.other_tracks), self.info.subtype,
                        self.info.channels, self.info.sample_rate, ", ".join(self.info.other_tracks))
        if self.info.unfinalized_duration is not None:
            log.warning("%s was not closed properly (its header declares %.1f s of audio but the file holds %.1f s, as when a "
                        "recorder stops without finalising the file); all %.1f s are processed. To repair the file "
                        "itself: ffmpeg -ignore_length 1 -i IN OUT.wav", self.path, self.info.unfinalized_duration,
                        self.info.duration, self.info.duration)
        if channel is not None and not 0 <= channel < self.info.channels:
            raise AudioError(f"channel {channel} requested but {self.path.name} has {self.info.channels} "
                             f"channel{'s' if self.info.channels != 1 else ''} (0..{self.info.channels - 1})")
        self.block_seconds = block_seconds
        self.realtime = realtime
        self.audio_channel = channel
        self.channel = "replay"
        self.duration: float | None = self.info.duration
        self.feed: LiveFeed | None = None
        self._stopped = threading.Event()

    def stop(self) -> None:
        """End the replay early (Ctrl-C), as :meth:`voicekit.capture.mic.MicSource.stop` ends a
        capture: the iteration ends at the next block."""
        self._stopped.set()

    def _blocks(self) -> Iterator[np.ndarray]:
        self.decoded_seconds = 0.0
        try:
            for block in iter_16k_blocks(self.path, self.block_seconds, self.audio_channel,
                                         per_channel=self.per_channel, raw=self.raw):
                if self._stopped.is_set():
                    return
                self.decoded_seconds += len(block) / SAMPLE_RATE
                yield block
        except AudioError as exc:
            if self.decoded_seconds == 0:
                raise
            held = self.decoded_seconds
            self.truncated = Truncation(held, max(self.info.duration, held), str(exc.__cause__ or exc))
            log.warning("%s breaks off at %.1f s (%s); the %.1f s before are processed", self.path, held,
                        self.truncated.reason, held)
            return
        declared = self.info.duration
        short = declared - self.decoded_seconds
        if (self.truncated is None and not self.info.estimated
                and short > max(TRUNCATION_MARGIN_SECONDS, TRUNCATION_MARGIN_SHARE * declared)):
            self.truncated = Truncation(self.decoded_seconds, declared)
            log.warning("%s ends at %.1f s, but its header declares %.1f s: it is truncated", self.path,
                        self.decoded_seconds, declared)

    def __iter__(self) -> Iterator[np.ndarray]:
        if not self.realtime:
            yield from self._blocks()
            return
        self.feed = LiveFeed()
        error: list[BaseException] = []

        def produce() -> None:
            t0 = time.monotonic()
            sent = 0.0
            try:
                for block in self._blocks():
                    # a block is delivered when its last sample is due, as a capture callback
                    # delivers it: the stream clock (and a turn's latency) is never flattered
                    sent += len(block) / SAMPLE_RATE
                    delay = t0 + sent - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    self.feed.push(block)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
                error.append(exc)
            finally:
                self.feed.close()

        thread = threading.Thread(target=produce, name="voicekit-replay", daemon=True)
        thread.start()
        yield from self.feed
        thread.join()
        if error:
            raise error[0]
