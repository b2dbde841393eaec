"""The shared conference microphone: sounddevice (PortAudio) capture into a :class:`LiveFeed`.

The stream is opened at the device's *native* sample rate and channel count (many devices refuse
16 kHz). The PortAudio callback runs on the audio thread and does three cheap things: downmix the
block, resample it to 16 kHz with the stateful :class:`~voicekit.audio.StreamResampler` (the one
replay uses; soxr on a 100 ms block takes well under a millisecond), and push it into the bounded
:class:`~voicekit.sources.LiveFeed` (never blocks). VAD, Whisper and diarization run on the thread
that iterates the source, never on the audio thread.

A device that stops delivering audio (unplugged, or its audio server gone) ends the capture:
a watchdog notices when the stream is no longer active, no block has come for
``stall_seconds``, or no first block within ``first_block_seconds`` of the start; it sets
:attr:`MicSource.lost` and stops the source, so the pipeline commits what it heard and the
caller can say so.

Two kinds of loss are counted and reported, neither stops the run:

* ``input_overflows``: PortAudio's ``input_overflow`` status flag (the driver dropped input
  because the callback was late);
* ``feed.overflows``: blocks dropped because the pipeline fell behind and the queue (30 s) was
  full (read as silence of their length, so later turns keep their times).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from voicekit.audio import SAMPLE_RATE, StreamResampler, downmix
from voicekit.capture import CaptureError
from voicekit.sources import LiveFeed

log = logging.getLogger(__name__)


#: Seconds PortAudio may take to list the devices (its initialisation, on the first use) before
#: the audio server is taken for hung.
AUDIO_SERVER_TIMEOUT_S = 20.0


def _sounddevice():
    """The ``sounddevice`` module. Its import initialises PortAudio, which lists the devices: with
    an audio server that hangs (a stopped PulseAudio) that took two minutes, deaf to Ctrl-C. It
    runs on a worker thread that the caller waits for (Ctrl-C still works), at most
    :data:`AUDIO_SERVER_TIMEOUT_S` seconds.

    Raises:
        CaptureError: sounddevice or PortAudio missing, or the audio server does not answer.
    """
    def load():  # noqa: ANN202
        try:
            import sounddevice as sd
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise CaptureError("sounddevice is not installed: pip install sounddevice") from exc
        except OSError as exc:  # PortAudio library missing
            raise CaptureError(f"PortAudio is missing ({exc}): apt-get install libportaudio2") from exc
        return sd

    return _within(load, "listing the audio devices")


def _within(call, what: str):  # noqa: ANN001, ANN202
    """``call()`` on a worker thread, waited for at most :data:`AUDIO_SERVER_TIMEOUT_S` seconds
    (a wait that Ctrl-C interrupts); its exception is raised here.

    Raises:
        CaptureError: the call did not return in time (the audio server does not answer).
    """
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=run, name="voicekit-portaudio", daemon=True)
    worker.start()
    worker.join(AUDIO_SERVER_TIMEOUT_S)
    if worker.is_alive():
        raise CaptureError(f"the audio server does not answer ({what} took more than {AUDIO_SERVER_TIMEOUT_S:g} s): "
                           "restart it (PulseAudio: `pulseaudio -k`, then `pulseaudio --start`) and try again")
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class InputDevice:
    """An input device as PortAudio lists it.

    Attributes:
        index: PortAudio device index.
        name: device name.
        hostapi: host API name (ALSA, PulseAudio, …).
        channels: maximum input channels.
        sample_rate: default (native) sample rate in Hz.
        default: whether it is the default input device.
    """

    index: int
    name: str
    hostapi: str
    channels: int
    sample_rate: int
    default: bool


def rescan() -> None:
    """Make PortAudio enumerate the devices again (it lists them once, at import)."""
    sd = _sounddevice()
    sd._terminate()
    _within(sd._initialize, "listing the audio devices again")


def list_input_devices() -> list[InputDevice]:
    """Every device with at least one input channel."""
    sd = _sounddevice()
    try:
        devices = sd.query_devices()
        hostapis = sd.query_hostapis()
        default_in = sd.default.device[0]
    except Exception as exc:  # noqa: BLE001 - PortAudio errors have no common base we can rely on
        raise CaptureError(f"cannot list audio devices ({exc})") from exc
    if default_in is None or default_in < 0:
        try:
            default_in = sd.query_hostapis(0)["default_input_device"]
        except Exception:  # noqa: BLE001
            default_in = -1
    out = []
    for i, d in enumerate(devices):
        if d["max_input_channels"] > 0:
            out.append(InputDevice(i, d["name"], hostapis[d["hostapi"]]["name"], int(d["max_input_channels"]),
                                   int(round(d["default_samplerate"])), i == default_in))
    return out


def require_input_devices() -> list[InputDevice]:
    """:func:`list_input_devices`, at least one.

    Raises:
        CaptureError: there is no input device (the message says how to get one).
    """
    devices = list_input_devices()
    if not devices:
        raise CaptureError("no audio input device found: connect a microphone, or start PulseAudio "
                           "(see docs/capture.md for the virtual microphone)")
    return devices


def resolve_device(spec: str | int | None) -> InputDevice:
    """Find an input device by index, exact name, or unique name substring (case-insensitive);
    None is the default input device.

    Raises:
        CaptureError: no input device, no match, or an ambiguous name.
    """
    devices = require_input_devices()
    if spec is None or spec == "":
        for d in devices:
            if d.default:
                return d
        return devices[0]
    text = str(spec).strip()
    if text.lstrip("-").isdigit():
        for d in devices:
            if d.index == int(text):
                return d
        raise CaptureError(f"no input device with index {text}; `voicekit devices` lists them")
    exact = [d for d in devices if d.name.lower() == text.lower()]
    if exact:
        return exact[0]
    found = [d for d in devices if text.lower() in d.name.lower()]
    if len(found) == 1:
        return found[0]
    if not found:
        hint = (" (--device names the microphone here: the compute device is --compute-device "
                f"{text.lower()})" if text.lower() in ("cpu", "cuda", "auto") else "")
        raise CaptureError(f"no input device named {text!r}{hint}; `voicekit devices` lists them")
    raise CaptureError(f"{text!r} matches several input devices ({', '.join(d.name for d in found)}); "
                       "give the index")


MAX_NATIVE_CHANNELS = 8


def native_channels(device: InputDevice) -> int:
    """The channel count to open: the device's own, except for the virtual ALSA plugin devices
    (``pulse``, ``default``…) that advertise 32 or more channels of which only the first few
    carry audio (a downmix of all would be mostly zeros): those are opened in stereo."""
    return device.channels if device.channels <= MAX_NATIVE_CHANNELS else 2


CLOSE_SECONDS = 5.0
"""How long the capture waits for PortAudio to stop and close the input stream before leaving it
(a hung audio server never lets it close). A healthy PulseAudio took over 2 s (the value before)
to stop a stream just started, on 2 busy cores (a CI run of 2026-12-07)."""


def _leave_to_closer() -> None:
    """A stream still closing on its closer thread at exit: sounddevice's exit handler
    (``Pa_Terminate``) would stop and close the same stream again, racing the closer inside
    PortAudio: heap corruption and SIGABRT at exit, or a join of the audio thread the closer
    joined, which never returns (a quick double Ctrl-C left `voicekit mic` hung after its outputs
    were written: a new-user trial). The process leaves the stream be."""
    import atexit

    atexit.unregister(_sounddevice()._exit_handler)


def _close_stream(stream, lost: bool, done: threading.Event) -> None:  # noqa: ANN001 - a sounddevice.InputStream
    """Stop (abort, when the device was lost: nothing queued is worth waiting for) and close;
    ``done`` is set once it is over."""
    try:
        if lost:
            stream.abort()
        else:
            stream.stop()
        stream.close()
    except Exception:  # noqa: BLE001 - closing never fails the meeting
        log.exception("closing the input stream failed")
    finally:
        done.set()


class MicSource:
    """Live microphone capture as a 16 kHz source for :meth:`voicekit.pipeline.Pipeline.run`.

    Iterating starts the stream, yields 16 kHz float32 blocks until :meth:`stop` (or Ctrl-C in the
    consuming thread), and always stops and closes the stream.

    Args:
        device: device index, name or name substring (None: the default input device).
        block_seconds: callback block length (default 0.1 s).
        max_seconds: capacity of the queue between the audio thread and the pipeline.
        duration: stop by itself after this many seconds of audio (None: until stopped).
        keep_audio: keep a copy of every 16 kHz block pushed (tests, measurements).
        channels: channels to open (default: the device's own count; see :func:`native_channels`).
        stall_seconds: after the first block, this long without another (blocks come every
            ``block_seconds``) means the device is lost (default 5.0 s).
        first_block_seconds: no first block this long after the stream started means the device
            is lost (default 15 s; PulseAudio's first block comes 0.15-1.9 s after the start).

    Attributes:
        lost: None while the device delivers; else why the capture ended by itself (the device
            stopped delivering audio), set by the watchdog before it stops the source.

    Raises:
        CaptureError: at construction, when the device cannot be found.
    """

    def __init__(self, device: str | int | None = None, block_seconds: float = 0.1, max_seconds: float = 30.0,
                 duration: float | None = None, keep_audio: bool = False, channels: int | None = None,
                 stall_seconds: float = 5.0, first_block_seconds: float = 15.0) -> None:
        self.device = resolve_device(device)
        self.sample_rate = self.device.sample_rate
        if channels is not None and not 1 <= channels <= self.device.channels:
            raise CaptureError(f"{self.device.name!r} has {self.device.channels} input channels; "
                               f"--channels {channels} is out of range")
        self.channels = channels or native_channels(self.device)
        self.block_seconds = block_seconds
        self.channel = "mic"
        self.duration: float | None = None
        self.stop_after = duration
        self.feed = LiveFeed(max_seconds=max_seconds)
        self.input_overflows = 0
        self.callbacks = 0
        self.samples_16k = 0
        self.first_callback = threading.Event()
        self.started_at: float | None = None
        self.first_callback_at: float | None = None
        self.last_callback_at: float | None = None
        self.stall_seconds = stall_seconds
        self.first_block_seconds = first_block_seconds
        self._watchdog: threading.Thread | None = None
        self.lost: str | None = None
        self.kept: list[np.ndarray] | None = [] if keep_audio else None
        self._resampler = StreamResampler(self.sample_rate)
        self._stopped = threading.Event()
        self._stream = None

    # --- the audio thread -----------------------------------------------------------------
    def _callback(self, indata: np.ndarray, frames: int, time_info, status) -> None:  # noqa: ANN001
        if status and status.input_overflow:
            self.input_overflows += 1
        resampler = self._resampler   # None once closed (_close)
        if self._stopped.is_set() or resampler is None:
            return
        block = resampler.process(downmix(indata))  # copies: indata is reused by PortAudio
        self.callbacks += 1
        self.last_callback_at = time.monotonic()
        if self.first_callback_at is None:
            self.first_callback_at = time.monotonic()
            self.first_callback.set()
        if len(block):
            self.samples_16k += len(block)
            if self.kept is not None:
                self.kept.append(block)
            self.feed.push(block)
        if self.stop_after is not None and self.samples_16k >= self.stop_after * SAMPLE_RATE:
            self._stopped.set()
            self.feed.close()

    # --- control --------------------------------------------------------------------------
    def start(self) -> None:
        """Open and start the stream (iteration does it when not done already).

        Raises:
            CaptureError: the device refuses the stream, or this source captured once already
                and was stopped (its queue is closed: a second iteration waited forever with a
                stream open).
        """
        if self._stream is not None:
            return
        if self.started_at is not None and self._stopped.is_set():
            raise CaptureError(f"this MicSource of {self.device.name!r} captured once and was stopped: make a new "
                               "MicSource to capture again")
        sd = _sounddevice()
        try:
            self._stream = sd.InputStream(device=self.device.index, samplerate=self.sample_rate,
                                          channels=self.channels, dtype="float32",
                                          blocksize=max(1, int(self.sample_rate * self.block_seconds)),
                                          callback=self._callback)
            self.started_at = time.monotonic()
            self._stream.start()
        except Exception as exc:  # noqa: BLE001 - sd.PortAudioError and friends
            self._stream = None
            raise CaptureError(f"cannot open the input device {self.device.name!r} at "
                               f"{self.sample_rate} Hz, {self.channels} channels ({exc})") from exc
        log.info("capturing from %r (%d Hz, %d channels)", self.device.name, self.sample_rate, self.channels)
        self._watchdog = threading.Thread(target=self._watch, args=(self._stream,), name="voicekit-mic-watchdog",
                                          daemon=True)
        self._watchdog.start()

    def _watch(self, stream) -> None:  # noqa: ANN001
        """End the capture when the device stops delivering: the stream is no longer active (PortAudio
        gave up), no block came for ``stall_seconds`` once audio flowed, or no first block came
        within ``first_block_seconds``. Runs until :meth:`stop`; :meth:`_close` waits for it
        before closing the stream."""
        while not self._stopped.wait(min(0.25, self.stall_seconds / 4)):
            last, now = self.last_callback_at, time.monotonic()
            if not stream.active:
                why = "the input stream stopped"
            elif last is not None and now - last > self.stall_seconds:
                why = f"no audio for {now - last:.1f} s"
            elif last is None and now - (self.started_at or now) > self.first_block_seconds:
                why = f"no audio at all in the {self.first_block_seconds:g} s after the stream started"
            else:
                continue
            if self._stopped.is_set():   # a stop (Ctrl-C, --seconds) raced the check: not a loss
                return
            self.lost = (f"the input device {self.device.name!r} stopped delivering audio after "
                         f"{self.samples_16k / SAMPLE_RATE:.1f} s ({why}: unplugged, or its audio server stopped)")
            log.info("%s", self.lost)
            self.stop()
            return

    def wait_first_callback(self, timeout: float = 5.0) -> bool:
        """Wait until the first audio block arrived (up to 2 s after start on PulseAudio)."""
        return self.first_callback.wait(timeout)

    def stop(self) -> None:
        """End the capture: the iteration ends after the blocks already queued."""
        if not self._stopped.is_set():
            self._stopped.set()
            self.feed.close()

    def close(self) -> None:
        """Stop the capture and close the stream now (idempotent). Iterating closes it by itself; a
        caller that started the stream and may fail before (or without) iterating closes it with this,
        or uses the source as a context manager (``with source:`` starts it and closes it): a stream
        left open goes on running PortAudio's audio thread until the process exits."""
        self.stop()
        self._close()

    def __enter__(self) -> MicSource:
        """Start the stream (see :meth:`start`, which raises :class:`CaptureError`)."""
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _close(self) -> None:
        watchdog = self._watchdog
        if watchdog is not None and watchdog is not threading.current_thread():
            watchdog.join(1.0)   # it reads the stream's state: never while the stream is closed
        stream, self._stream = self._stream, None
        if stream is None:
            return
        # a stream whose audio server hangs stays referenced by its closer thread (below), and
        # through its callback this source: the resampler (soxr, a nanobind object) is let go
        # now, or nanobind reports it leaked when the process exits (20 lines after the error)
        self._resampler = None
        # PortAudio's stop joins its audio thread, which waits on the audio server: a server that
        # hangs (instead of dying) would hold this thread in C for good, deaf to Ctrl-C, before the
        # pipeline could commit the open utterance. The stream is closed on a thread of its own.
        # (waited for on an event: a Thread.join that a signal handler interrupts marks the thread
        # stopped while it runs on, CPython 3.11's bpo-45274 handling, so is_alive() would lie)
        done = threading.Event()
        threading.Thread(target=_close_stream, args=(stream, self.lost is not None, done),
                         name="voicekit-mic-close", daemon=True).start()
        try:
            done.wait(CLOSE_SECONDS)
        except BaseException:   # a second Ctrl-C (MeetingAborted) while it closes: the closer goes on
            if not done.is_set():
                _leave_to_closer()
            raise
        if not done.is_set():
            log.warning("the input device %r did not close within %g s (its audio server hangs): it is left "
                        "open, and the meeting goes on to its end", self.device.name, CLOSE_SECONDS)
            _leave_to_closer()

    @property
    def audio(self) -> np.ndarray:
        """Everything captured so far at 16 kHz (needs ``keep_audio=True``)."""
        if not self.kept:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self.kept)

    def report(self) -> str:
        """One line: what was captured and what was lost."""
        return (f"captured {self.samples_16k / SAMPLE_RATE:.1f} s from {self.device.name!r} "
                f"({self.sample_rate} Hz, {self.channels} ch); input overflows {self.input_overflows}, "
                f"queue overflows {self.feed.overflows} ({self.feed.dropped_seconds:.1f} s dropped)")

    def __iter__(self) -> Iterator[np.ndarray]:
        self.start()
        try:
            yield from self.feed
        finally:
            self._stopped.set()
            self._close()
