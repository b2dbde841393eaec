"""Decode, normalize and resample audio.

Everything after this module sees float32 mono at 16 kHz (``SAMPLE_RATE``). Files are decoded
with soundfile (libsndfile: WAV, FLAC, OGG, MP3, 24-bit and float WAV…) and, for what libsndfile
cannot read (M4A/AAC, Opus in MP4…), with PyAV. Resampling is soxr's *streaming* resampler, so a
file read block by block gives the same samples as the file resampled whole.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

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
    """

    path: Path
    sample_rate: int
    channels: int
    duration: float
    subtype: str


def to_float32(samples: np.ndarray) -> np.ndarray:
    """Convert PCM samples of any common dtype to float32 in [-1, 1].

    Args:
        samples: ``(n_samples,)`` or ``(n_samples, n_channels)`` int16, int32, uint8, float16,
            float32 or float64. Integer PCM is scaled by its full scale (int16: 32768). A float
            array whose peak exceeds 2.0 is taken for unscaled int16 PCM and rescaled (with a
            warning); a float peak between 1.0 and 2.0 is clipped (with a warning).

    Returns:
        float32 array of the same shape.

    Raises:
        AudioError: for a dtype that is not audio (complex, object, bool).
    """
    a = np.asarray(samples)
    if a.dtype == np.int16:
        return (a.astype(np.float32) / 32768.0).astype(np.float32)
    if a.dtype == np.int32:
        return (a.astype(np.float64) / 2147483648.0).astype(np.float32)
    if a.dtype == np.uint8:
        return ((a.astype(np.float32) - 128.0) / 128.0).astype(np.float32)
    if a.dtype.kind == "f":
        out = a.astype(np.float32)
        peak = float(np.max(np.abs(out))) if out.size else 0.0
        if not np.isfinite(peak):
            out = np.nan_to_num(out, nan=0.0, posinf=1.0, neginf=-1.0)
            peak = float(np.max(np.abs(out))) if out.size else 0.0
            log.warning("audio held NaN or infinite samples; they were replaced by 0 / ±1")
        if peak > 2.0:
            log.warning(
                "float audio peaks at %.1f: taken for unscaled 16-bit PCM and divided by 32768", peak
            )
            out = out / 32768.0
        elif peak > 1.0:
            log.warning("float audio peaks at %.2f (> 1.0): clipped to [-1, 1]", peak)
        return np.clip(out, -1.0, 1.0).astype(np.float32)
    raise AudioError(f"samples of dtype {a.dtype} are not audio: pass int16/int32/float32 PCM")


def downmix(samples: np.ndarray, channel: int | None = None) -> np.ndarray:
    """Reduce ``(n_samples, n_channels)`` to ``(n_samples,)``: mean of channels, or one channel.

    Args:
        samples: ``(n_samples,)`` or ``(n_samples, n_channels)`` float32.
        channel: 0-based channel to keep instead of the mean.

    Raises:
        AudioError: if ``channel`` does not exist.
    """
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


class StreamResampler:
    """Stateful resampler to 16 kHz (soxr ``ResampleStream``, quality "HQ").

    Feeding a signal in blocks of any size gives the same output, sample for sample, as
    :func:`resample` on the whole signal (soxr keeps the filter state between calls).

    Args:
        in_rate: input sample rate in Hz.
        out_rate: output sample rate in Hz (default 16000).
    """

    def __init__(self, in_rate: int, out_rate: int = SAMPLE_RATE) -> None:
        if in_rate <= 0:
            raise AudioError(f"sample rate must be positive, got {in_rate}")
        self.in_rate = int(in_rate)
        self.out_rate = int(out_rate)
        self._stream = (
            None
            if self.in_rate == self.out_rate
            else soxr.ResampleStream(self.in_rate, self.out_rate, 1, dtype="float32", quality="HQ")
        )

    def process(self, block: np.ndarray, last: bool = False) -> np.ndarray:
        """Resample one block.

        Args:
            block: ``(n,)`` float32 mono at ``in_rate``.
            last: True for the final block (flushes the filter's delay line).

        Returns:
            ``(m,)`` float32 at ``out_rate``; may be empty while the filter fills.
        """
        block = np.ascontiguousarray(block, dtype=np.float32)
        if self._stream is None:
            return block
        return self._stream.resample_chunk(block, last=last)


def resample(samples: np.ndarray, in_rate: int, out_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Resample a whole ``(n,)`` float32 signal; identical to :class:`StreamResampler`."""
    return StreamResampler(in_rate, out_rate).process(samples, last=True)


def _check_path(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path}: no such file; check the path")
    if path.is_dir():
        raise AudioError(f"{path} is a directory; give an audio file (WAV, FLAC, OGG, MP3, M4A)")
    if path.stat().st_size == 0:
        raise AudioError(f"{path} is empty (0 bytes); the recording was not saved")


def probe(path: str | Path) -> AudioInfo:
    """Read a recording's header.

    Raises:
        AudioError: missing file, directory, empty file, or a format neither soundfile nor PyAV
            can decode.
    """
    path = Path(path)
    _check_path(path)
    import soundfile as sf

    try:
        info = sf.info(str(path))
        if info.frames > 0 or info.duration > 0:
            return AudioInfo(path, int(info.samplerate), int(info.channels),
                             float(info.frames) / info.samplerate, str(info.subtype))
    except Exception:  # noqa: BLE001 - try PyAV next
        pass
    return _probe_av(path)


def _probe_av(path: Path) -> AudioInfo:
    try:
        import av
    except ImportError as exc:  # pragma: no cover - av is a dependency
        raise AudioError(f"{path}: not a format soundfile reads, and PyAV is missing: pip install av") from exc
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise AudioError(f"{path} holds no audio stream")
            stream = container.streams.audio[0]
            rate = int(stream.codec_context.sample_rate or stream.rate or 0)
            channels = int(stream.codec_context.channels or 1)
            duration = float(container.duration or 0) / 1e6
            if duration <= 0 and stream.duration and stream.time_base:
                duration = float(stream.duration * stream.time_base)
            if rate <= 0:
                raise AudioError(f"{path}: the audio stream has no sample rate")
            return AudioInfo(path, rate, channels, duration, str(stream.codec_context.name))
    except AudioError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise AudioError(
            f"{path} is not an audio file voicekit can decode ({type(exc).__name__}: {exc}); "
            "convert it to WAV or FLAC (e.g. ffmpeg -i IN -ar 16000 OUT.wav)"
        ) from exc


def read_native_blocks(path: str | Path, block_seconds: float = 0.5) -> Iterator[tuple[np.ndarray, int]]:
    """Decode a recording in blocks at its native rate and channel count.

    Yields:
        ``(block, sample_rate)`` where block is ``(n, n_channels)`` float32 in [-1, 1].

    Raises:
        AudioError: as :func:`probe`, or a file that breaks off mid-stream (truncated).
    """
    path = Path(path)
    info = probe(path)
    import soundfile as sf

    try:
        handle = sf.SoundFile(str(path))
    except Exception:  # noqa: BLE001 - not for libsndfile; PyAV decodes it
        handle = None
    if handle is not None:
        with handle:
            n = max(1, int(block_seconds * handle.samplerate))
            try:
                while True:
                    block = handle.read(n, dtype="float32", always_2d=True)
                    if len(block) == 0:
                        break
                    yield block, int(handle.samplerate)
            except sf.LibsndfileError as exc:
                raise AudioError(f"{path} breaks off mid-stream ({exc}); the file is truncated") from exc
        return
    yield from _read_av_blocks(path, info)


def _read_av_blocks(path: Path, info: AudioInfo) -> Iterator[tuple[np.ndarray, int]]:
    import av

    try:
        with av.open(str(path)) as container:
            stream = container.streams.audio[0]
            resampler = av.AudioResampler(format="flt", layout=None, rate=info.sample_rate)
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    arr = out.to_ndarray()  # (1, n*ch) packed float
                    ch = out.layout.nb_channels if hasattr(out.layout, "nb_channels") else len(out.layout.channels)
                    yield arr.reshape(-1, ch).astype(np.float32), info.sample_rate
    except Exception as exc:  # noqa: BLE001
        raise AudioError(f"{path}: decoding failed ({type(exc).__name__}: {exc})") from exc


def load_audio(path: str | Path, channel: int | None = None) -> np.ndarray:
    """Decode a whole recording to ``(n_samples,)`` float32 mono at 16 kHz.

    Args:
        path: any WAV/FLAC/OGG/MP3/M4A recording, any rate, any channel count.
        channel: 0-based channel to keep instead of the downmix.

    Raises:
        AudioError: see :func:`probe`.
    """
    rate = SAMPLE_RATE
    parts = []
    for block, rate in read_native_blocks(path, block_seconds=30.0):
        parts.append(downmix(block, channel))
    if not parts:
        return np.zeros(0, dtype=np.float32)
    return resample(np.concatenate(parts), rate)


def iter_16k_blocks(
    path: str | Path, block_seconds: float = 0.1, channel: int | None = None
) -> Iterator[np.ndarray]:
    """Decode, downmix and resample a recording block by block.

    Yields:
        ``(n,)`` float32 blocks at 16 kHz; concatenated they equal :func:`load_audio`.
    """
    resampler: StreamResampler | None = None
    pending: np.ndarray | None = None
    for block, rate in read_native_blocks(path, block_seconds):
        if resampler is None:
            resampler = StreamResampler(rate)
        if pending is not None:
            out = resampler.process(pending)
            if len(out):
                yield out
        pending = downmix(block, channel)
    if resampler is not None and pending is not None:
        out = resampler.process(pending, last=True)
        if len(out):
            yield out
