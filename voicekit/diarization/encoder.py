"""Speaker embeddings from the GE2E speaker encoder that ships in the ``resemblyzer`` wheel.

Source: Wan et al., "Generalized End-to-End Loss for Speaker Verification" (ICASSP 2018); weights
and architecture (3-layer LSTM, 256 units, 40 mel bands, 25 ms / 10 ms frames, 1.6 s partial
windows, 256-d L2-normalised output) from Resemblyzer 0.1.4 (Apache-2.0). The mel spectrogram is
computed here in NumPy with librosa's mel filter bank (identical to resemblyzer's
``wav_to_mel_spectrogram`` up to float rounding), so a stream needs no per-call librosa start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voicekit.audio import SAMPLE_RATE
from voicekit.devices import require_torch_device, torch_precision

N_FFT = 400  # 25 ms at 16 kHz
HOP = 160  # 10 ms
N_MELS = 40
TARGET_DBFS = -30.0  # resemblyzer's audio_norm_target_dBFS


@dataclass(frozen=True)
class WindowEmbeddings:
    """Embeddings of sliding windows over one stretch of audio.

    Attributes:
        starts: ``(n,)`` float64 window start times in seconds.
        ends: ``(n,)`` float64 window end times in seconds.
        vectors: ``(n, 256)`` float32, L2-normalised.
    """

    starts: np.ndarray
    ends: np.ndarray
    vectors: np.ndarray

    @property
    def centers(self) -> np.ndarray:
        """``(n,)`` window centre times in seconds."""
        return (self.starts + self.ends) / 2

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, index) -> "WindowEmbeddings":
        """The windows selected by a boolean mask or index array."""
        return WindowEmbeddings(self.starts[index], self.ends[index], self.vectors[index])


class SpeakerEncoder:
    """GE2E (resemblyzer) on sliding windows.

    Args:
        device: ``cpu`` or ``cuda``.
        compute_type: ``--compute-type``; ``float16``/``bfloat16`` (and their ``int8_`` forms) run
            the LSTM under torch autocast, anything else in float32 (see :mod:`voicekit.devices`).
        threads: torch intra-op threads on CPU (default 1: on 2 cores, OpenMP with 2 threads was
            measured 6-10x slower for this small LSTM when another process was busy).
        window: window length in seconds (default 1.0).
        hop: step between windows in seconds (default 0.25: four windows per second).
    """

    dimension = 256

    def __init__(self, device: str = "cpu", threads: int = 1, window: float = 1.0, hop: float = 0.25,
                 compute_type: str = "default") -> None:
        import librosa.filters
        import torch
        from resemblyzer import VoiceEncoder

        require_torch_device(device)
        self._precision = lambda: torch_precision(device, compute_type)
        if device == "cpu" and threads > 0:
            torch.set_num_threads(threads)
        self._torch = torch
        self.device = device
        self.model = VoiceEncoder(device=device, verbose=False)
        self.model.eval()
        self._fbank = librosa.filters.mel(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS).T.astype(np.float32)
        self._window = np.hanning(N_FFT + 1)[:-1].astype(np.float32)  # periodic Hann, as scipy/librosa
        self.window_frames = max(20, round(window * 100))
        self.hop_frames = max(1, round(hop * 100))

    @property
    def window_seconds(self) -> float:
        """Length of one embedding window in seconds (``window_frames`` 10 ms mel frames)."""
        return self.window_frames / 100

    @property
    def hop_seconds(self) -> float:
        """Step between the starts of consecutive windows in seconds (``hop_frames`` 10 ms frames)."""
        return self.hop_frames / 100

    def mel(self, samples: np.ndarray) -> np.ndarray:
        """Mel power spectrogram, ``(n,)`` float32 16 kHz -> ``(n_frames, 40)`` float32 (10 ms frames)."""
        padded = np.pad(samples.astype(np.float32), N_FFT // 2)
        n = 1 + (len(padded) - N_FFT) // HOP
        idx = np.arange(N_FFT)[None, :] + HOP * np.arange(n)[:, None]
        spec = np.abs(np.fft.rfft(padded[idx] * self._window, n=N_FFT, axis=1)) ** 2
        return (spec.astype(np.float32) @ self._fbank).astype(np.float32)

    @staticmethod
    def normalize_volume(samples: np.ndarray) -> np.ndarray:
        """Raise quiet audio to -30 dBFS RMS (never lower it), as resemblyzer's preprocessing."""
        rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if len(samples) else 0.0
        if rms < 1e-6:
            return samples
        gain_db = TARGET_DBFS - 20 * np.log10(rms)
        return samples * (10 ** (gain_db / 20)) if gain_db > 0 else samples

    def embed_batch(self, mels: np.ndarray) -> np.ndarray:
        """Embed ``(batch, frames, 40)`` mel windows -> ``(batch, 256)`` float32, L2-normalised."""
        torch = self._torch
        with torch.inference_mode(), self._precision():
            x = torch.from_numpy(np.ascontiguousarray(mels, dtype=np.float32)).to(self.device)
            return self.model(x).float().cpu().numpy().astype(np.float32)

    def embed_windows(self, samples: np.ndarray, offset: float = 0.0) -> WindowEmbeddings:
        """Embed sliding windows over one utterance.

        Args:
            samples: ``(n,)`` float32 at 16 kHz.
            offset: start time of ``samples`` in seconds (added to the window times).

        Returns:
            :class:`WindowEmbeddings`; one window (the whole audio, zero-padded) when the audio is
            shorter than a window, none when it is shorter than 0.2 s. Windows start every hop;
            the last one is pulled back to end with the audio, so it may start only a few frames
            after the one before (a 1.00 s utterance gives two windows 10 ms apart; dropping such
            a window was measured and not kept: docs/accuracy.md).
        """
        if len(samples) < 0.2 * SAMPLE_RATE:
            return WindowEmbeddings(np.zeros(0), np.zeros(0), np.zeros((0, self.dimension), np.float32))
        mel = self.mel(self.normalize_volume(samples))
        w, h = self.window_frames, self.hop_frames
        n_frames = len(mel)
        if n_frames <= w:
            starts = np.array([0])
            mel = np.pad(mel, ((0, w - n_frames), (0, 0)))
            ends_f = np.array([n_frames])
        else:
            n = 1 + int(np.ceil((n_frames - w) / h))
            starts = np.minimum(np.arange(n) * h, n_frames - w)
            starts = np.unique(starts)
            ends_f = starts + w
        batch = np.stack([mel[s:s + w] for s in starts])
        vectors = self.embed_batch(batch)
        return WindowEmbeddings(offset + starts * HOP / SAMPLE_RATE,
                                offset + np.minimum(ends_f * HOP / SAMPLE_RATE, len(samples) / SAMPLE_RATE),
                                vectors)
