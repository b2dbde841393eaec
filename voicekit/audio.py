"""Decode, normalize and resample audio.

Everything after this module sees float32 mono at 16 kHz (``SAMPLE_RATE``). Files are decoded
with soundfile (libsndfile: WAV, FLAC, OGG, 24-bit and float WAV…) and, for MPEG audio (MP3, MP2)
and what libsndfile cannot read (M4A/AAC, Opus in MP4…), with PyAV; MPEG audio is probed with PyAV
too (by its name), since libsndfile's mpg123 writes its notes straight to the terminal. Resampling is soxr's *streaming* resampler, so a
file read block by block gives the same samples as the file resampled whole.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from voicekit._checks import is_whole_hz

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000
"""The pipeline's internal sample rate in Hz."""


class AudioError(Exception):
    """A recording cannot be read. The message names the problem and the fix."""


@dataclass(frozen=True)
class AudioInfo:
    """What a recording holds.

    Attributes:
        path: the file.
        sample_rate: native sample rate in Hz.
        channels: number of channels.
        duration: length in seconds.
        subtype: the sample format as the decoder names it ("PCM_16", "FLOAT", "aac"…).
        declared_duration: for a truncated file, the length in seconds its header declares
            (``duration`` is what it holds); None otherwise.
        unfinalized_duration: for a WAV whose header was never finalised (a recorder that
            stopped without closing the file: its header declares less audio than follows, often
            none), the length in seconds the header declares; ``duration`` is what the file
            holds, and all of it is decoded. None otherwise.
        estimated: ``duration`` is FFmpeg's estimate from the file size and the bitrate, since
            nothing in the file counts its length (ADTS AAC, an MP3 without a Xing/Info/VBRI
            frame): a file that decodes to less is not known to be truncated.
        other_tracks: the audio tracks of the file past the first, which is the one decoded
            (a video or screen recording with the microphone on a second track), as
            ``"track 2 (aac, 1 ch, 48000 Hz)"``.
    """

    path: Path
    sample_rate: int
    channels: int
    duration: float
    subtype: str
    declared_duration: float | None = None
    unfinalized_duration: float | None = None
    estimated: bool = False
    other_tracks: tuple[str, ...] = ()


UNSCALED_PEAK = 32.0
"""A float peak above which a stream holds 16-bit PCM values, whole numbers or not (30 dB over
full scale: no float export is that hot; int16-range speech peaks in the thousands)."""


class PcmNormalizer:
    """Convert PCM blocks of one stream to float32 in [-1, 1], with one decision per stream.

    Integer PCM is scaled by its full scale (int16: 32768, int32: 2**31, uint8: offset 128).
    Float PCM is expected in [-1, 1]; two faults are common (samples written as integers into a
    float array, and decoders overshooting full scale), and they are told apart by the peak:

    - before any block showed scaled audio (a sample that is not a whole number, at a peak up
      to :data:`UNSCALED_PEAK`), a peak above 2.0 in whole numbers or above
      :data:`UNSCALED_PEAK`: the stream is unscaled 16-bit PCM; it is divided by 32768 (warned
      once), and so is every later block of the stream, whatever its peak. Once scaled audio
      was seen (in that block too: a hot float export peaking at 2.5), a peak is clipped
      instead (it never silences the stream);
    - a peak in (1.0, 2.0]: the stream overshoots full scale; samples are clipped to [-1, 1]
      (warned once per stream, not once per block);
    - NaN and infinite samples are replaced by 0 and ±1 (warned once).

    Args:
        name: what the warnings call the stream (a path, ``"mic"``…).
    """

    def __init__(self, name: str = "audio") -> None:
        self.name = name
        self.unscaled = False
        self.scaled = False   # a float block held a sample that is not a whole number
        self._warned: set[str] = set()

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """Convert one block.

        Args:
            samples: ``(n_samples,)`` or ``(n_samples, n_channels)`` int16, int32, uint8, float16,
                float32 or float64.

        Returns:
            float32 array of the same shape, in [-1, 1].

        Raises:
            AudioError: for a dtype that is not audio (complex, object, bool, str).
        """
        a = np.asarray(samples)
        scaled = scaled_int_pcm(a)
        if scaled is not None:
            return scaled
        if a.dtype.kind != "f":
            raise AudioError(f"samples of dtype {a.dtype} are not audio: pass int16/int32/float32 PCM")
        out = a.astype(np.float32)
        if out.size and not np.isfinite(out).all():
            # float16/float64 values beyond float32's range become inf here: +-1 after scaling
            out = np.nan_to_num(out, nan=0.0, posinf=1.0 if not self.unscaled else 32767.0,
                                neginf=-1.0 if not self.unscaled else -32768.0)
            self._warn_once("nan", "%s holds NaN or infinite samples; they were replaced by 0 / ±1", self.name)
        peak = float(np.max(np.abs(out))) if out.size else 0.0
        if not (self.unscaled or self.scaled) and peak > 0.0:
            # fractional samples up to UNSCALED_PEAK are float audio, however hot (an export peaking
            # at 2.5 was divided by 32768 into silence: a streaming review); whole numbers over 2.0,
            # or any peak over UNSCALED_PEAK, are 16-bit PCM values in a float array
            self.scaled = peak <= UNSCALED_PEAK and bool(np.any(out != np.rint(out)))
        if not (self.unscaled or self.scaled) and peak > 2.0:
            self.unscaled = True
            self._warn_once("unscaled", "%s: float audio peaks at %.1f: taken for unscaled 16-bit PCM and "
                            "divided by 32768 (scale float samples to [-1, 1] to silence this)", self.name, peak)
        if self.unscaled:
            out = out / np.float32(32768.0)
            peak /= 32768.0
        if peak > 1.0:
            self._warn_once("clip", "%s: float audio goes past full scale (the first block to do so peaks at "
                            "%.3f): samples past ±1 are clipped", self.name, peak)
        return np.clip(out, -1.0, 1.0).astype(np.float32, copy=False)


def to_float32(samples: np.ndarray) -> np.ndarray:
    """Convert one array of PCM samples of any common dtype to float32 in [-1, 1].

    A one-block :class:`PcmNormalizer`: see it for the scaling rules (int16 by 32768; a float
    peak above 2.0 is unscaled 16-bit PCM, rescaled with a warning; a float peak in (1.0, 2.0]
    is clipped with a warning). For a stream of blocks use one :class:`PcmNormalizer`.

    Args:
        samples: ``(n_samples,)`` or ``(n_samples, n_channels)`` int16, int32, uint8, float16,
            float32 or float64.

    Returns:
        float32 array of the same shape.

    Raises:
        AudioError: for a dtype that is not audio (complex, object, bool).
    """
    return PcmNormalizer()(samples)


def normalize(samples: np.ndarray, sample_rate: float, channel: int | None = None) -> np.ndarray:
    """The entry point for audio held in memory: any PCM array to ``(n,)`` float32 mono at 16 kHz.

    Args:
        samples: ``(n_samples,)``, ``(n_samples, n_channels)`` or channels-first
            ``(n_channels, n_samples)`` (taken as such when the first axis has at most 8 entries
            and the second is longer) int16, int32, uint8, float16, float32 or float64; scaled
            as :class:`PcmNormalizer` says.
        sample_rate: the samples' rate in Hz (8000, 22050, 44100, 48000…).
        channel: 0-based channel to keep instead of the mean of the channels.

    Returns:
        ``(n,)`` float32 at 16 kHz in [-1, 1], ``n = round(n_samples * 16000 / sample_rate)``.

    Raises:
        AudioError: a dtype that is not audio, a rate that is not a positive finite number, an
            array of more than two dimensions, or a channel that does not exist.
    """
    a = np.asarray(samples)
    if a.ndim == 0 or a.ndim > 2:
        raise AudioError(f"audio must be (n_samples,) or (n_samples, n_channels); got shape {a.shape}")
    if not is_whole_hz(sample_rate):
        raise AudioError(f"sample rate must be a positive whole number of Hz, got {sample_rate!r}")
    if a.ndim == 2 and a.shape[0] <= 8 and a.shape[1] > a.shape[0]:
        a = a.T  # channels first, as librosa and torchaudio give it
    mono = downmix(PcmNormalizer()(a), channel)
    # resampling a full-scale step rings past ±1 (Gibbs): clipped, so the range holds at 16 kHz too
    return np.clip(resample(mono, int(sample_rate)), -1.0, 1.0)


def downmix(samples: np.ndarray, channel: int | None = None) -> np.ndarray:
    """Reduce ``(n_samples, n_channels)`` to ``(n_samples,)``: mean of channels, or one channel.

    Args:
        samples: ``(n_samples,)`` or ``(n_samples, n_channels)`` float32.
        channel: 0-based channel to keep instead of the mean.

    Raises:
        AudioError: if ``channel`` does not exist, or the array has no channel at all.
    """
    if samples.ndim == 2 and samples.shape[1] == 0:
        raise AudioError("the audio has 0 channels")
    if samples.ndim == 1:
        if channel not in (None, 0):
            raise AudioError(f"channel {channel} requested but the audio is mono: drop --channel")
        return samples
    if channel is not None:
        if not 0 <= channel < samples.shape[1]:
            raise AudioError(
                f"channel {channel} requested but the audio has {samples.shape[1]} channels "
                f"(0..{samples.shape[1] - 1})"
            )
        return np.ascontiguousarray(samples[:, channel])
    return samples.mean(axis=1, dtype=np.float32)


def mono_block(block: np.ndarray, who: str) -> np.ndarray:
    """A pushed block as a ``(n,)`` array, for the producer's call (``who``: ``"Pipeline.push"``).

    Raises:
        ValueError: raw bytes (``np.frombuffer(data, np.int16)`` reads 16-bit PCM) or a block
            that is not one-dimensional (downmix first: :func:`downmix`).
    """
    if isinstance(block, (bytes, bytearray, memoryview)):
        raise ValueError(f"{who} takes a numpy array of 16 kHz samples, got {type(block).__name__}: "
                         "np.frombuffer(data, dtype=np.int16) reads 16-bit PCM bytes")
    block = np.asarray(block)
    if block.ndim != 1:
        raise ValueError(f"{who} takes (n,) mono blocks at 16 kHz, got shape {block.shape}: downmix first "
                         "(voicekit.audio.downmix), or run one pipeline per channel")
    return block


def scaled_int_pcm(samples: np.ndarray) -> np.ndarray | None:
    """Integer PCM scaled by its full scale: int16 by 2**15, int32 by 2**31, uint8 around 128.

    Args:
        samples: an array of any shape.

    Returns:
        float32 of the same shape in [-1, 1]; None when ``samples`` is not int16, int32 or uint8.
    """
    if samples.dtype == np.int16:
        return (samples.astype(np.float32) / 32768.0).astype(np.float32)
    if samples.dtype == np.int32:
        return (samples.astype(np.float64) / 2147483648.0).astype(np.float32)
    if samples.dtype == np.uint8:
        return ((samples.astype(np.float32) - 128.0) / 128.0).astype(np.float32)
    return None


class StreamResampler:
    """Stateful resampler to 16 kHz (soxr ``ResampleStream``, quality "HQ").

    Feeding a signal in blocks of any size gives the same output, sample for sample, as
    :func:`resample` on the whole signal (soxr keeps the filter state between calls).

    Args:
        in_rate: input sample rate in Hz.
        out_rate: output sample rate in Hz (default 16000).
        channels: 1 for ``(n,)`` blocks; more for ``(n, channels)`` blocks, each channel
            resampled as if alone.

    Raises:
        AudioError: ``in_rate`` or ``out_rate`` is not a positive whole number of Hz (44100.7 would
            have been read as 44100: the audio's pitch and every time after it slightly off).
    """

    def __init__(self, in_rate: int, out_rate: int = SAMPLE_RATE, channels: int = 1) -> None:
        for what, rate in (("sample rate", in_rate), ("output sample rate", out_rate)):
            if not is_whole_hz(rate):
                raise AudioError(f"{what} must be a positive whole number of Hz, got {rate!r}")
        self.in_rate = int(in_rate)
        self.out_rate = int(out_rate)
        self._stream = (
            None
            if self.in_rate == self.out_rate
            else soxr.ResampleStream(self.in_rate, self.out_rate, channels, dtype="float32", quality="HQ")
        )

    def process(self, block: np.ndarray, last: bool = False) -> np.ndarray:
        """Resample one block.

        Args:
            block: ``(n,)`` float32 mono (``(n, channels)`` for several channels) at ``in_rate``;
                integer PCM (int16, int32, uint8, as a capture callback gives it) is scaled to
                [-1, 1] first (:func:`scaled_int_pcm`).
            last: True for the final block (flushes the filter's delay line).

        Returns:
            ``(m,)`` (or ``(m, channels)``) float32 at ``out_rate``, in [-1, 1] for integer
            input and for float input in [-1, 1] (the filter's overshoot on full-scale, clipped
            audio, about 1 %, is clipped: it is not the input's level); may be empty while the
            filter fills.

        Raises:
            AudioError: a dtype that is not PCM audio (int64, complex, bool…).
        """
        block = np.asarray(block)
        scaled = scaled_int_pcm(block)
        if scaled is not None:
            block = scaled
        elif block.dtype.kind != "f":
            raise AudioError(f"samples of dtype {block.dtype} are not audio: pass int16/int32/uint8/float32 PCM")
        block = np.ascontiguousarray(block, dtype=np.float32)
        if self._stream is None:
            return block
        bounded = scaled is not None or not block.size or float(np.max(np.abs(block))) <= 1.0
        out = self._stream.resample_chunk(block, last=last)
        # a streaming review: a clipped int16 file at 44.1 kHz came out peaking at 1.011, and the
        # pipeline then warned of "float audio peaks at 1.01 (> 1.0)"
        return np.clip(out, -1.0, 1.0, out=out) if bounded else out


TELEPHONE_CUTOFF = 4100.0
"""Hz: just above the 4 kHz Nyquist frequency of 8 kHz telephone audio."""

TELEPHONE_SHARE = 1e-5
"""Below this share of its power above :data:`TELEPHONE_CUTOFF`, audio is telephone-band."""


def high_band_share(samples: np.ndarray, sample_rate: int = SAMPLE_RATE, cutoff: float = TELEPHONE_CUTOFF) -> float:
    """The share of a stretch's power above ``cutoff`` Hz (Welch's method: Hann windows of 32 ms,
    ``scipy.signal.welch``).

    Telephone audio (8 kHz, or 8 kHz played into a 16 kHz stream) has almost none: the pyannote
    sample 2.5e-7 above 4.1 kHz; the wideband evaluation recordings 7.6e-5 to 9e-2 per utterance
    (JFK's 1961 address 4.7e-5 over the whole file), and their copies resampled to 8 kHz and back
    under 1e-10 (docs/accuracy.md).

    Args:
        samples: ``(n_samples,)`` float32 audio.
        sample_rate: Hz.
        cutoff: Hz.

    Returns:
        A fraction in [0, 1]; 1.0 for a stretch without power or shorter than one 32 ms window
        (nothing to call telephone audio).
    """
    from scipy.signal import welch

    nperseg = int(0.032 * sample_rate)
    if len(samples) < nperseg:
        return 1.0
    freqs, power = welch(np.asarray(samples, dtype=np.float64), fs=sample_rate, nperseg=nperseg)
    total = float(power.sum())
    return float(power[freqs >= cutoff].sum()) / total if total > 0 else 1.0


def is_telephone_band(samples: np.ndarray, sample_rate: int = SAMPLE_RATE) -> bool:
    """Whether ``(n_samples,)`` float32 audio is telephone-band: less than :data:`TELEPHONE_SHARE`
    of its power above 4.1 kHz (:func:`high_band_share`)."""
    return high_band_share(samples, sample_rate) < TELEPHONE_SHARE


def resample(samples: np.ndarray, in_rate: int, out_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Resample a whole ``(n,)`` float32 signal; identical to :class:`StreamResampler`."""
    return StreamResampler(in_rate, out_rate).process(samples, last=True)


RAW_SUBTYPES = {"s16le": "PCM_16", "s24le": "PCM_24", "s32le": "PCM_32", "f32le": "FLOAT", "u8": "PCM_U8"}
"""Sample formats of headerless PCM (ffmpeg's names) and libsndfile's subtype for each."""

_SAMPLE_BYTES = {"PCM_16": 2, "PCM_24": 3, "PCM_32": 4, "FLOAT": 4, "DOUBLE": 8, "PCM_U8": 1, "PCM_S8": 1}


@dataclass(frozen=True)
class RawPcm:
    """How to read headerless PCM (a ``.raw``/``.pcm`` file, bytes from a socket).

    Attributes:
        sample_rate: rate in Hz.
        sample_format: ``s16le`` (default), ``s24le``, ``s32le``, ``f32le`` or ``u8``.
        channels: interleaved channels.

    Raises:
        AudioError: a rate that is not positive, an unknown format, or no channel.
    """

    sample_rate: int
    sample_format: str = "s16le"
    channels: int = 1

    def __post_init__(self) -> None:
        if self.sample_rate <= 0:
            raise AudioError(f"raw PCM needs a positive sample rate, got {self.sample_rate}")
        if self.sample_format not in RAW_SUBTYPES:
            raise AudioError(f"unknown raw PCM format {self.sample_format!r}: use one of "
                             f"{', '.join(RAW_SUBTYPES)}")
        if self.channels < 1:
            raise AudioError(f"raw PCM needs at least one channel, got {self.channels}")

    @property
    def frame_bytes(self) -> int:
        """Bytes per frame (one sample of every channel)."""
        return _SAMPLE_BYTES[RAW_SUBTYPES[self.sample_format]] * self.channels

    def soundfile_args(self) -> dict:
        """The keyword arguments with which libsndfile reads this PCM."""
        return {"format": "RAW", "subtype": RAW_SUBTYPES[self.sample_format], "samplerate": self.sample_rate,
                "channels": self.channels, "endian": "LITTLE"}


def decode_pcm_bytes(data: bytes, raw: RawPcm, channel: int | None = None) -> np.ndarray:
    """Headerless PCM bytes to ``(n,)`` float32 mono at 16 kHz.

    Args:
        data: the bytes, interleaved little-endian samples as ``raw`` says.
        raw: their rate, sample format and channel count.
        channel: 0-based channel to keep instead of the downmix.

    Raises:
        AudioError: a byte count that is not a whole number of frames, or a missing channel.
    """
    import soundfile as sf

    frame_bytes = raw.frame_bytes
    if len(data) % frame_bytes:
        raise AudioError(f"{len(data)} bytes of {raw.sample_format} PCM in {raw.channels} channel(s) is not a "
                         f"whole number of {frame_bytes}-byte frames: check the format and channel count")
    if not data:
        return np.zeros(0, dtype=np.float32)
    samples, _ = sf.read(io.BytesIO(data), dtype="float32", always_2d=True, **raw.soundfile_args())
    return resample(downmix(PcmNormalizer("raw PCM")(samples), channel), raw.sample_rate)


def _check_path(path: Path) -> None:
    piped = "voicekit reads a recording from a file it can seek in: save the stream first (ffmpeg -i IN meeting.wav)"
    if str(path) == "-":
        raise AudioError(f"'-' (standard input) is not a recording file: {piped}")
    if not path.exists():
        text = str(path)
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", text):   # Path made "https://x" "https:/x"
            scheme = text.split(":", 1)[0]
            raise AudioError(f"{scheme}://{text.split(':/', 1)[1].lstrip('/')} is an address, not a file: "
                             "voicekit replays a recording on disk; download it first (curl -O URL)")
        raise AudioError(f"{path}: no such file; check the path")
    if path.is_dir():
        raise AudioError(f"{path} is a directory; give an audio file (WAV, FLAC, OGG, MP3, M4A)")
    if not path.is_file():  # a pipe (/dev/stdin under `cat x.flac |`), a FIFO or a device
        raise AudioError(f"{path} is a pipe or a device, not a recording file: {piped}")
    if path.stat().st_size == 0:
        raise AudioError(f"{path} is empty (0 bytes); the recording was not saved")


HEADERLESS_SUFFIXES = (".raw", ".pcm")
"""File name endings of headerless PCM, which needs its format given (:class:`RawPcm`)."""

_DECLARED = re.compile(r"^data\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
#: A data size that is a placeholder, not a length: 0xFFFFFFFF, written by encoders writing to a
#: pipe (ffmpeg) that cannot go back to fill in the size.
_UNKNOWN_SIZE = 0xFFFFFFFF - 8


def _unfinalized_wav(path: Path, block: int, rate: int) -> tuple[int, int] | None:
    """``(declared frames, held frames)`` of a RIFF/WAVE file whose data chunk is followed by 0.1 s
    or more of bytes that are no chunk (no printable four-character id, right after the data or
    after its pad byte, which some writers leave out), no ID3 tag and not only zeros: a header
    never finalised (sizes left at 0, or at an early flush). None for any other file.

    libsndfile and FFmpeg read only as far as the data chunk's size, so the check walks the
    chunk headers (RIFF: Microsoft/IBM, "Multimedia Programming Interface and Data
    Specifications 1.0", 1991), at most the first 64 KiB.
    """
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(65536)
        if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None
        pos = 12
        while pos + 8 <= len(head):
            cid, n = head[pos:pos + 4], int.from_bytes(head[pos + 4:pos + 8], "little")
            if cid == b"data":
                end = pos + 8 + n
                if n >= _UNKNOWN_SIZE or size - end < block * (rate // 10):
                    return None
                f.seek(end)
                nxt = f.read(5)
                if nxt.startswith(b"ID3") or any(
                        len(nxt[i:i + 4]) == 4 and all(32 <= b < 127 for b in nxt[i:i + 4]) for i in (0, 1)):
                    return None  # another chunk, or an ID3 tag, follows
                f.seek(end)
                while chunk := f.read(1 << 20):  # zero padding after the data is no audio
                    if chunk.strip(b"\0"):
                        return n // block, (size - pos - 8) // block
                return None
            pos += 8 + n + (n & 1)
    return None


def probe(path: str | Path, raw: RawPcm | None = None) -> AudioInfo:
    """Read a recording's header.

    Args:
        path: the recording.
        raw: read it as headerless PCM of this format (no header to read).

    Returns:
        :class:`AudioInfo`; ``declared_duration`` is set when the header promises more audio than
        the file holds (a truncated recording: what is there is still decoded), and
        ``unfinalized_duration`` when a WAV's header declares less than follows it (a recording
        that was not closed: all of it is decoded). A data size of 0xFFFFFFFF (a WAV written to a
        pipe) means "to the end of the file", not a length.

    Raises:
        AudioError: missing file, directory, empty file, a format neither soundfile nor PyAV
            can decode; with ``raw``, a file that has a header soundfile reads, or one whose size
            is not a whole number of frames (the wrong format or channel count, or a file cut
            mid-frame).
    """
    path = Path(path)
    _check_path(path)
    import soundfile as sf

    if raw is not None:
        if path.suffix.lower() not in HEADERLESS_SUFFIXES:
            try:
                header = sf.info(str(path))
            except RuntimeError:
                header = None   # no header soundfile knows: headerless indeed
            # (libsndfile guesses a headerless format from some extensions, .vox .gsm .au .snd:
            # "RAW" is no header)
            if header is not None and header.frames > 0 and header.format != "RAW":
                raise AudioError(f"{path} has a {header.format} header ({header.samplerate} Hz, {header.channels} "
                                 "channel(s)), so it is not headerless PCM: drop --raw-rate/--raw-format/"
                                 "--raw-channels")
        size = path.stat().st_size
        frames, stray = divmod(size, raw.frame_bytes)
        if stray:
            # the format or the channel count is wrong (e.g. mono read as stereo), or the file was
            # cut mid-frame; decode_pcm_bytes refuses the same bytes given from memory
            raise AudioError(
                f"{path} holds {size} bytes, not a whole number of {raw.frame_bytes}-byte frames "
                f"({raw.sample_format}, {raw.channels} channel(s)): check --raw-format and --raw-channels; "
                f"if they are right and the recording was cut mid-frame, drop its last {stray} byte(s) "
                f"(truncate -s {size - stray} {shlex.quote(str(path))})")
        return AudioInfo(path, raw.sample_rate, raw.channels, frames / raw.sample_rate,
                         RAW_SUBTYPES[raw.sample_format])
    if path.suffix.lower() in HEADERLESS_SUFFIXES:
        raise AudioError(f"{path} is headerless PCM ({path.suffix}), which says nothing of its format: give "
                         "--raw-rate HZ (and --raw-format s16le|s24le|s32le|f32le|u8, --raw-channels N when "
                         "not 16-bit mono)")
    if _is_mpeg_audio(path):
        # not through libsndfile: its mpg123 writes to the terminal (fd 2) on every damaged frame
        # or stale Xing header ("Note: Illegal Audio-MPEG-Header…", "Warning: Xing stream size
        # off…"), as it does when decoding (read_native_blocks sends MP3 to PyAV for that reason)
        return _probe_av(path, mpeg=True)
    error = ""
    try:
        info = sf.info(str(path))
        extra = info.extra_info or ""
        block = int(info.channels) * _SAMPLE_BYTES.get(str(info.subtype), 0)
        rate = int(info.samplerate)
        stale = _unfinalized_wav(path, block, rate) if block and str(info.format) in ("WAV", "WAVEX") else None
        if stale is not None:
            return AudioInfo(path, rate, int(info.channels), stale[1] / rate, str(info.subtype),
                             unfinalized_duration=stale[0] / rate)
        if info.frames > 0 or info.duration > 0:
            declared = None
            m = _DECLARED.search(extra)
            if m and block and int(m.group(2)) < int(m.group(1)) < _UNKNOWN_SIZE:
                declared = int(m.group(1)) // block / rate
            return AudioInfo(path, rate, int(info.channels), float(info.frames) / rate, str(info.subtype), declared)
    except Exception as exc:  # noqa: BLE001 - try PyAV next
        error = str(exc)
    return _probe_av(path, error)


MPEG_SUFFIXES = (".mp3", ".mp2", ".mp1", ".mpga", ".mpa")
"""File name endings of MPEG audio, probed and decoded with PyAV (FFmpeg), never libsndfile."""

# the magic numbers of formats libsndfile reads that a file misnamed .mp3 may hold
_OTHER_MAGIC = (b"RIFF", b"RIFX", b"RF64", b"fLaC", b"OggS", b"FORM", b".snd", b"caff", b"wvpk", b"MThd")

# FFmpeg's MPEG audio decoders and libsndfile's names of the same streams (AudioInfo.subtype)
_MPEG_SUBTYPES = {"mp3": "MPEG_LAYER_III", "mp2": "MPEG_LAYER_II", "mp1": "MPEG_LAYER_I"}


def _is_mpeg_audio(path: Path) -> bool:
    """Whether ``path`` is named as MPEG audio (:data:`MPEG_SUFFIXES`) and starts with none of the
    magic numbers of the other formats libsndfile reads (a WAV misnamed .mp3 stays libsndfile's).
    An MP3 misnamed otherwise still reaches libsndfile, which knows it by its frames."""
    if path.suffix.lower() not in MPEG_SUFFIXES:
        return False
    with open(path, "rb") as f:
        return not f.read(4).startswith(_OTHER_MAGIC)


# FFmpeg formats whose length is estimated from the bitrate (AVFMT_DURATION_FROM_BITRATE)
_ESTIMATED_LENGTH_FORMATS = ("aac", "ac3", "eac3", "dts", "mp2", "mp1")


def _mpeg_frames_counted(path: Path) -> bool:
    """Whether an MP3's first frame is a Xing/Info/VBRI frame, which counts its frames (else
    its length is estimated from the bitrate of its first frame)."""
    with open(path, "rb") as f:
        head = f.read(10)
        start = 0
        if head[:3] == b"ID3" and len(head) == 10:   # an ID3v2 tag first: its size is syncsafe
            start = 10 + (head[6] << 21 | head[7] << 14 | head[8] << 7 | head[9])
        f.seek(start)
        first = f.read(4096)
    return any(tag in first[:200] for tag in (b"Xing", b"Info", b"VBRI"))


def _probe_av(path: Path, sf_error: str = "", mpeg: bool = False) -> AudioInfo:
    try:
        import av
    except ImportError as exc:  # pragma: no cover - av is a dependency
        raise AudioError(f"{path}: not a format soundfile reads, and PyAV is missing: pip install av") from exc
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise AudioError(f"{path} holds no audio stream (a video without sound, or not a recording); "
                                 "give a recording with speech in it (WAV, FLAC, OGG, MP3, M4A)")
            stream = container.streams.audio[0]
            if stream.codec_context is None or not stream.codec_context.name:
                tag = getattr(stream.codec_context, "codec_tag", "") if stream.codec_context else ""
                raise AudioError(f"{path} uses an audio codec voicekit cannot decode"
                                 f"{f' ({sf_error.strip()})' if sf_error else ''}{tag and f' [{tag}]'}; "
                                 "convert it to WAV or FLAC (e.g. ffmpeg -i IN -ar 16000 OUT.wav)")
            rate = int(stream.codec_context.sample_rate or stream.rate or 0)
            channels = int(stream.codec_context.channels or 1)
            duration = float(container.duration or 0) / 1e6
            if duration <= 0 and stream.duration and stream.time_base:
                duration = float(stream.duration * stream.time_base)
            if rate <= 0:
                raise AudioError(f"{path} is damaged or not a recording: FFmpeg finds an audio stream in it "
                                 "with no sample rate; convert it to WAV or FLAC (e.g. ffmpeg -i IN -ar 16000 "
                                 "OUT.wav), or check that it is the recording")
            if duration <= 0 and next(container.decode(stream), None) is None:
                raise AudioError(f"{path} holds no audio: its header describes {channels} channel(s) at {rate} Hz "
                                 "but not one sample follows (the recording stopped before it began)")
            subtype = str(stream.codec_context.name)
            # elementary streams with no length of their own: FFmpeg estimates it from the bitrate
            estimated = (container.format.name in _ESTIMATED_LENGTH_FORMATS
                         or (container.format.name == "mp3" and not _mpeg_frames_counted(path)))
            if mpeg:
                # as libsndfile gave them: the subtype by its name, the length a whole number of
                # frames (FFmpeg, as mpg123, counts an MP3's frames from its Xing header when it has one)
                codec = str(getattr(stream.codec_context.codec, "name", "") or subtype)
                subtype = _MPEG_SUBTYPES.get(codec.removesuffix("float"), subtype)
                if stream.duration and stream.time_base:
                    duration = round(float(stream.duration * stream.time_base) * rate) / rate
            others = tuple(f"track {n} ({s.codec_context.name}, {s.codec_context.channels} ch, "
                           f"{s.codec_context.sample_rate} Hz)" if s.codec_context else f"track {n}"
                           for n, s in enumerate(container.streams.audio[1:], start=2))
            return AudioInfo(path, rate, channels, duration, subtype, estimated=estimated, other_tracks=others)
    except AudioError:
        raise
    except Exception as exc:  # noqa: BLE001
        if _looks_like_text(path):
            raise AudioError(f"{path} is not an audio file: it holds text (neither libsndfile nor FFmpeg "
                             "finds audio in it); give the recording itself") from exc
        # already the formats the usual fix converts to, or a file FFmpeg cannot parse at all (a
        # cut M4A without its index, random bytes): converting it with FFmpeg fails the same way
        unreadable = isinstance(exc, (av.error.InvalidDataError, av.error.EOFError))
        if path.suffix.lower() in (".wav", ".flac") or unreadable:
            raise AudioError(f"{path} is damaged or not a recording: neither libsndfile nor FFmpeg can read "
                             f"it ({type(exc).__name__}: {exc}); give an intact copy of the recording") from exc
        raise AudioError(
            f"{path} is not an audio file voicekit can decode ({type(exc).__name__}: {exc}); "
            "convert it to WAV or FLAC (e.g. ffmpeg -i IN -ar 16000 OUT.wav)"
        ) from exc


def _looks_like_text(path: Path) -> bool:
    """Whether the file's first 4 KiB decode as UTF-8 text without control characters other than
    tab, newline and carriage return (notes or a transcript given in place of a recording)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not only a character cut at the end of the 4 KiB
            return False
        text = head[:exc.start].decode("utf-8")
    return bool(text) and all(c.isprintable() or c in "\t\n\r" for c in text)


def read_native_blocks(path: str | Path, block_seconds: float = 0.5,
                       raw: RawPcm | None = None) -> Iterator[tuple[np.ndarray, int]]:
    """Decode a recording in blocks at its native rate and channel count.

    Args:
        path: the recording.
        block_seconds: block length in seconds.
        raw: read it as headerless PCM of this format.

    Yields:
        ``(block, sample_rate)`` where block is ``(n, n_channels)`` float32 in [-1, 1].

    Raises:
        AudioError: as :func:`probe`, or a file that breaks off mid-stream (truncated).
    """
    path = Path(path)
    info = probe(path, raw)
    import soundfile as sf

    if info.unfinalized_duration is not None:  # libsndfile stops where the stale header says
        yield from _read_av_blocks(path, info, {"ignore_length": "1"})
        return
    handle = None
    if not info.subtype.startswith("MPEG_LAYER"):
        # MP3 goes to PyAV: libsndfile's mpg123 writes a line to the terminal for every damaged
        # frame (165 lines for faster-whisper's multilingual.mp3); FFmpeg decodes the same samples
        try:
            handle = sf.SoundFile(str(path), **(raw.soundfile_args() if raw else {}))
        except Exception:  # noqa: BLE001 - not for libsndfile; PyAV decodes it
            handle = None
    if handle is not None:
        normalize_block = PcmNormalizer(str(path))
        with handle:
            n = max(1, int(block_seconds * handle.samplerate))
            try:
                while True:
                    block = handle.read(n, dtype="float32", always_2d=True)
                    if len(block) == 0:
                        break
                    # libsndfile scales integer PCM; float WAVs are given as stored
                    yield normalize_block(block), int(handle.samplerate)
            except sf.LibsndfileError as exc:
                raise AudioError(f"{path} breaks off mid-stream ({exc}); the file is truncated") from exc
        return
    yield from _read_av_blocks(path, info)


DAMAGED_PACKETS_SHARE = 0.5
"""A compressed recording where more than this share of the packets read so far (past the first
20) fail to decode is broken, not damaged here and there: decoding stops with an error."""


def _read_av_blocks(path: Path, info: AudioInfo, options: dict[str, str] | None = None,
                    ) -> Iterator[tuple[np.ndarray, int]]:
    """PyAV's decoding, packet by packet. A packet the decoder refuses (a few damaged bytes in
    an M4A or MP3: FFmpeg's ``InvalidDataError``, mostly) is skipped and read as silence of its length,
    taken from the next frame's timestamp, so the rest of the recording is transcribed at its
    times (a trial: 5 flipped bytes of a 42 s M4A stopped the replay at 11.8 s); the skips are
    logged once at the end."""
    import av

    skipped: list[float] = []   # where (seconds) a damaged packet was skipped
    filled = 0.0
    packets = 0
    try:
        with av.open(str(path), options=options or {}) as container:
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout=None, rate=info.sample_rate)
            normalize_block = PcmNormalizer(str(path))  # lossy decoders overshoot full scale
            ch, end = info.channels, None   # end: where the last decoded frame ended, seconds
            for packet in container.demux(stream):
                packets += 1
                try:
                    frames = packet.decode()
                except av.error.FFmpegError:   # this packet's bytes (InvalidDataError, mostly)
                    if len(skipped) > 20 and len(skipped) > DAMAGED_PACKETS_SHARE * packets:
                        raise
                    skipped.append(end if end is not None else 0.0)
                    continue
                for frame in frames:
                    start = float(frame.pts * frame.time_base) if frame.pts is not None else None
                    if skipped and end is not None and start is not None and skipped[-1] == end and start > end:
                        gap = round((start - end) * info.sample_rate)
                        filled += gap / info.sample_rate
                        yield np.zeros((gap, ch), np.float32), info.sample_rate
                    if start is not None:
                        end = start + frame.samples / frame.sample_rate
                    for out in resampler.resample(frame):
                        arr = out.to_ndarray()  # (1, n*ch) packed float
                        ch = out.layout.nb_channels if hasattr(out.layout, "nb_channels") else len(out.layout.channels)
                        yield normalize_block(arr.reshape(-1, ch)), info.sample_rate
    except Exception as exc:  # noqa: BLE001
        raise AudioError(f"{path}: decoding failed ({type(exc).__name__}: {exc})") from exc
    if skipped:
        runs = [(at, len(list(group))) for at, group in itertools.groupby(round(t, 1) for t in skipped)]
        where = ", ".join(f"{at:.1f} s" + (f" ({n} in a row)" if n > 1 else "") for at, n in runs[:5]) + (
            ", …" if len(runs) > 5 else "")
        log.warning("%s: %d damaged packet(s) skipped, at %s: %.2f s of audio read as silence, the rest "
                    "transcribed at its times", path, len(skipped), where, filled)


def load_audio(path: str | Path, channel: int | None = None, raw: RawPcm | None = None) -> np.ndarray:
    """Decode a whole recording to ``(n_samples,)`` float32 mono at 16 kHz.

    Args:
        path: any WAV/FLAC/OGG/MP3/M4A recording, any rate, any channel count.
        channel: 0-based channel to keep instead of the downmix.
        raw: read it as headerless PCM of this format.

    Raises:
        AudioError: see :func:`probe`.
    """
    rate = SAMPLE_RATE
    parts = []
    for block, rate in read_native_blocks(path, block_seconds=30.0, raw=raw):
        parts.append(downmix(block, channel))
    if not parts:
        return np.zeros(0, dtype=np.float32)
    return resample(np.concatenate(parts), rate)


SAME_CHANNEL_TOLERANCE = 0.1
"""Two channels whose difference is under this share of their level carry the same audio (a mono
recording saved as stereo: faster-whisper's jfk.flac differs by 2.7 %; the two people of its
stereo_diarization.wav by 128 %)."""


def _native_start(path: str | Path, raw: RawPcm | None, seconds: float) -> np.ndarray | None:
    """A recording's first ``seconds`` at its native rate, ``(n_samples, n_channels)`` float64;
    None when nothing decodes before a failure (the :class:`AudioError` is raised then)."""
    parts, n = [], 0
    try:
        for block, rate in read_native_blocks(path, block_seconds=1.0, raw=raw):
            parts.append(block)
            n += len(block)
            if n >= seconds * rate:
                break
    except AudioError:
        if not parts:
            raise
    return np.concatenate(parts).astype(np.float64) if parts else None


def same_channels(path: str | Path, raw: RawPcm | None = None, seconds: float = 30.0,
                  tolerance: float = SAME_CHANNEL_TOLERANCE) -> list[tuple[int, int, float]]:
    """Pairs of channels that carry the same audio over a recording's first ``seconds``.

    Args:
        path: the recording.
        raw: read it as headerless PCM of this format.
        seconds: how much of the start to compare (decoded at the native rate).
        tolerance: the largest ``||a - b|| / max(||a||, ||b||)`` that counts as the same audio.

    Returns:
        ``(channel a, channel b, relative difference)`` for each such pair, ``a < b`` (0-based);
        empty for a mono recording, or when the start is silent.

    Raises:
        AudioError: as :func:`read_native_blocks`, when no audio came out before the decoder
            failed (a file that breaks off later is compared over what it held: the replay
            transcribes a truncated recording as far as it goes).
    """
    x = _native_start(path, raw, seconds)
    if x is None or x.shape[1] < 2:
        return []
    level = np.linalg.norm(x, axis=0)
    pairs = []
    for a in range(x.shape[1]):
        for b in range(a + 1, x.shape[1]):
            top = max(level[a], level[b])
            if top > 1e-3:
                diff = float(np.linalg.norm(x[:, a] - x[:, b]) / top)
                if diff < tolerance:
                    pairs.append((a, b, diff))
    return pairs


CANCELLING_DOWNMIX = 0.1
"""A mono downmix under this share of its channels' mean level (-20 dB) cancels itself: one
channel is the other phase-inverted (a mis-wired balanced cable, a mid-side recording read as
left-right). Same audio on both gives 1.0, unrelated channels about 0.7."""


def downmix_level(path: str | Path, raw: RawPcm | None = None, seconds: float = 30.0) -> float | None:
    """The level (RMS) of a recording's mono downmix over its first ``seconds``, as a share of
    its channels' mean RMS: below :data:`CANCELLING_DOWNMIX` the downmix cancels and the pipeline
    hears silence where the channels hold speech (``--channel N`` reads one).

    Returns:
        The share (float, 0 to 1); None for a mono recording or a silent start.

    Raises:
        AudioError: as :func:`same_channels`.
    """
    x = _native_start(path, raw, seconds)
    if x is None or x.shape[1] < 2:
        return None
    channels = float(np.linalg.norm(x, axis=0).mean())
    return float(np.linalg.norm(x.mean(axis=1)) / channels) if channels > 1e-3 else None


def iter_16k_blocks(
    path: str | Path, block_seconds: float = 0.1, channel: int | None = None, per_channel: bool = False,
    raw: RawPcm | None = None,
) -> Iterator[np.ndarray]:
    """Decode, downmix and resample a recording block by block.

    Args:
        path: the recording.
        block_seconds: block length in seconds (at the native rate).
        channel: 0-based channel to keep instead of the downmix.
        per_channel: keep every channel, each resampled on its own (``channel`` is ignored).
        raw: read it as headerless PCM of this format.

    Yields:
        ``(n,)`` float32 blocks at 16 kHz; concatenated they equal :func:`load_audio`. With
        ``per_channel``, ``(n, n_channels)`` blocks whose column ``c`` concatenated equals
        ``load_audio(path, channel=c)``.
    """
    resampler: StreamResampler | None = None
    pending: np.ndarray | None = None
    for block, rate in read_native_blocks(path, block_seconds, raw=raw):
        if resampler is None:
            resampler = StreamResampler(rate, channels=block.shape[1] if per_channel else 1)
        if pending is not None:
            out = resampler.process(pending)
            if len(out):
                yield out
        pending = block if per_channel else downmix(block, channel)
    if resampler is not None and pending is not None:
        out = resampler.process(pending, last=True)
        if len(out):
            yield out
