"""Crosstalk in a recording with one person per channel: another person's speech heard on a
microphone (bleed), told from the channel's own speech by the energy and the loudness curves of
the channels (:class:`ChannelLevels`). :func:`voicekit.pipeline.run_per_channel` drops the words
it finds to be crosstalk.
"""

from __future__ import annotations

import numpy as np

from voicekit.audio import SAMPLE_RATE

CROSSTALK_DB = 10.0
"""dB: a word of a per-channel recording whose channel carries this much less energy over the
word than another channel does may be that other channel's person, picked up by this microphone
(bleed), when the loudness of the two also rises and falls together
(:data:`CROSSTALK_CORRELATION`). Lapel or desk microphones a metre or more apart pick a
neighbour up 14-30 dB below their own wearer."""


CROSSTALK_CORRELATION = 0.9
"""How alike the loudness of two channels must rise and fall over a word for the quieter one to
be hearing the louder one. Set on mixes made from the evaluation recordings (no multi-microphone
recording with real bleed is at hand): a copy of the other channel at -14 to -26 dB gives
0.94-1.00 (0.94 for a word at the edge of the other's speech), two people talking at once with
no bleed -0.59 to 0.81 (81 words of a 10 s overlap, one channel 15 dB quieter). Reverberation
and noise lower a real microphone's copy: a word missed there is kept, never lost. So does a
delay: a copy 3-5 ms late (a metre or two between microphones) correlates 0.76-0.90 over 10 ms
frames, and 15-20 % bleed so delayed came out as a few words of the other person (a per-channel
review). Searching lags of up to 20 ms, or averaging the curves over 30 ms, caught every such
window, but also dropped a word of two people talking at once with no bleed
(`test_per_channel_keeps_both_people_talking_at_once_whatever_their_levels`): not kept, as a word
lost is worse than a word kept twice."""

CROSSTALK_CONTEXT = 0.1
"""Seconds added on each side of a word for the crosstalk check: Whisper gives some words no
length at all, and a loudness curve needs a few frames."""


def _followed(mine: np.ndarray, theirs: np.ndarray) -> bool:
    """Whether loudness curve ``mine`` rises and falls with ``theirs``: Pearson correlation at
    least :data:`CROSSTALK_CORRELATION`."""
    return theirs.std() > 0.0 and float(np.corrcoef(mine, theirs)[0, 1]) >= CROSSTALK_CORRELATION


class ChannelLevels:
    """The recent audio of every channel of a recording with one person per channel, to tell a
    channel's own speech from crosstalk: another person's speech heard on its microphone.

    The measures are the energy ratio between channels over a word and the correlation of their
    loudness curves (features of the crosstalk detection of multi-microphone meeting
    transcription, e.g. Wrigley et al. 2005, "Speech and crosstalk detection in multichannel
    audio", IEEE Trans. Speech Audio Process. 13(1), here as two fixed thresholds, not a trained
    classifier).

    Args:
        n_channels: the channel count.
        keep_seconds: how much audio is kept; a span older than that is never called crosstalk.
        threshold_db: :data:`CROSSTALK_DB`.
    """

    FRAME = 160
    """Samples of one energy frame: 10 ms at 16 kHz."""

    def __init__(self, n_channels: int, keep_seconds: float = 60.0, threshold_db: float = CROSSTALK_DB) -> None:
        self._keep = round(keep_seconds * SAMPLE_RATE / self.FRAME)
        self._energy = np.zeros((0, n_channels))   # (frames, channels): each frame's energy, float64
        self._rest = np.zeros((0, n_channels), np.float32)   # samples short of a whole frame
        self._first = 0   # stream frame index of the first kept frame
        self.ratio = 10.0 ** (threshold_db / 10.0)

    def push(self, block: np.ndarray) -> None:
        """Take one ``(n, n_channels)`` float32 16 kHz block (the stream's next samples)."""
        x = np.concatenate([self._rest, block]) if len(self._rest) else block
        whole = len(x) // self.FRAME * self.FRAME
        frames = x[:whole].astype(np.float64).reshape(-1, self.FRAME, x.shape[1])
        self._rest = x[whole:]
        self._energy = np.concatenate([self._energy, (frames * frames).sum(axis=1)])
        if len(self._energy) > 2 * self._keep:   # trimmed now and then, not at every block
            drop = len(self._energy) - self._keep
            self._energy = self._energy[drop:]
            self._first += drop

    def crosstalk(self, channel: int, start: float, end: float) -> bool:
        """Whether ``start``-``end`` (seconds of the stream, widened by :data:`CROSSTALK_CONTEXT`
        on each side) of ``channel`` is another channel's speech: that channel carries more
        energy by the threshold, and the two channels' loudness (the square root of each 10 ms
        frame's energy) rises and falls together (Pearson correlation at least
        :data:`CROSSTALK_CORRELATION`), as a copy of one signal does. Two people talking at once,
        at whatever levels, do not (a trial: with the energy alone, a quieter channel lost 20 of
        its 23 words under a louder one, with no bleed at all). False for a span no longer (or not
        yet) kept."""
        a = max(int((start - CROSSTALK_CONTEXT) * SAMPLE_RATE) // self.FRAME - self._first, 0)
        b = -(-round((end + CROSSTALK_CONTEXT) * SAMPLE_RATE) // self.FRAME) - self._first
        if b - a < 2 or a >= len(self._energy):
            return False
        frames = self._energy[a:b]
        energy = frames.sum(axis=0)
        louder = [c for c in range(len(energy)) if c != channel and energy[c] > self.ratio * energy[channel]]
        mine = np.sqrt(frames[:, channel])
        if mine.std() == 0.0:   # digital silence: nothing heard here
            return False
        # every louder channel, not only the loudest: with three people, a loud one talking over
        # the bleed of another hid it (a per-channel review)
        return any(_followed(mine, np.sqrt(frames[:, c])) for c in louder)
