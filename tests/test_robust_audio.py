"""Issue 8, sample formats: what arrays and files of any shape, dtype, rate and damage become.

Every input is made here from real speech in ../shared/eval (numpy, soundfile, sox).
"""

import logging
import struct
import subprocess

import numpy as np
import pytest
import soundfile as sf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from _pipeline_support import EVAL, SAMPLE, needs_eval
from voicekit.audio import (
    AudioError,
    PcmNormalizer,
    RawPcm,
    StreamResampler,
    decode_pcm_bytes,
    high_band_share,
    is_telephone_band,
    iter_16k_blocks,
    load_audio,
    normalize,
    probe,
    resample,
    to_float32,
)

pytestmark = needs_eval

JFK = EVAL / "faster_whisper" / "jfk.flac"
STEREO = EVAL / "faster_whisper" / "stereo_diarization.wav"


@pytest.fixture(scope="module")
def speech():
    """10 s of the two-speaker sample, float32 at 16 kHz, peak 0.5."""
    x = load_audio(SAMPLE)[:160000]
    return (x / np.abs(x).max() * 0.5).astype(np.float32)


def _warnings(caplog):
    return [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "voicekit.audio"]


def test_float16_speech_keeps_its_values(speech):
    y = normalize(speech.astype(np.float16), 16000)
    assert y.dtype == np.float32 and y.shape == speech.shape
    assert np.abs(y - speech).max() < 1e-3  # float16 has 11 bits of mantissa


def test_int16_and_int32_never_scaled_are_scaled_by_full_scale(speech):
    assert np.abs(normalize((speech * 32767).astype(np.int16), 16000) - speech).max() < 1e-4
    assert np.abs(normalize((speech * 2**31).astype(np.int32), 16000) - speech).max() < 1e-6


def test_float_peak_above_2_is_unscaled_pcm_rescaled_once_for_the_whole_stream(speech, caplog):
    signal = np.concatenate([speech, speech[:16000] * 1e-5])  # ends with a whisper
    unscaled = signal * 32768.0  # int16 values in a float array
    norm = PcmNormalizer("test")
    blocks = [norm(unscaled[i:i + 1600]) for i in range(0, len(unscaled), 1600)]
    y = np.concatenate(blocks)
    # every block rescaled, even the quiet ones whose own peak is below 2.0
    quiet = [i for i in range(0, len(unscaled), 1600) if np.abs(unscaled[i:i + 1600]).max() <= 2.0]
    assert len(quiet) == 10
    assert np.abs(y - signal).max() < 1e-6
    assert len([r for r in _warnings(caplog) if "unscaled 16-bit PCM" in r.getMessage()]) == 1


def test_float_peak_between_1_and_2_is_clipped_and_warned_once_per_stream(speech, caplog):
    hot = speech * 3.0  # peak 1.5: a decoder that overshot full scale
    norm = PcmNormalizer("test")
    y = np.concatenate([norm(hot[i:i + 1600]) for i in range(0, len(hot), 1600)])
    over = sum(1 for i in range(0, len(hot), 1600) if np.abs(hot[i:i + 1600]).max() > 1.0)
    assert over >= 3, "several blocks overshoot, and still one warning"
    assert np.abs(y).max() == 1.0
    assert np.array_equal(y, np.clip(hot, -1, 1))
    clip_warnings = [r for r in _warnings(caplog) if "clipped" in r.getMessage()]
    assert len(clip_warnings) == 1
    assert to_float32(np.array([1.5, -0.2])).tolist() == pytest.approx([1.0, -0.2])


def test_a_hot_float_recording_is_clipped_not_taken_for_unscaled_pcm(tmp_path, speech, caplog):
    """A streaming review: a float WAV exported hot (peak 2.5) after a second of digital silence
    was divided by 32768 as if it held int16 values: the whole recording fell silent (peak
    0.00008), and read in blocks it gave other samples than read whole. Fractional samples are
    float audio however loud: clipped, with one warning."""
    hot = np.concatenate([np.zeros(16000, np.float32), speech * 5.0]).astype(np.float32)
    assert np.abs(hot).max() > 2.0 and np.any(hot != np.rint(hot))
    sf.write(tmp_path / "hot.wav", hot, 16000, subtype="FLOAT")
    whole = load_audio(tmp_path / "hot.wav")
    assert np.array_equal(whole, np.clip(hot, -1.0, 1.0))
    assert np.array_equal(np.concatenate(list(iter_16k_blocks(tmp_path / "hot.wav"))), whole)
    assert not [r for r in _warnings(caplog) if "unscaled" in r.getMessage()]


def test_resampling_a_clipped_recording_stays_in_full_scale(tmp_path, caplog):
    """A streaming review: a hard-clipped int16 recording at 44.1 kHz came out of the resampler
    peaking at 1.011, and the pipeline warned of "float audio peaks at 1.01 (> 1.0)"."""
    t = np.arange(44100) / 44100
    clipped = np.clip(1.5 * np.sin(2 * np.pi * 1000 * t), -1.0, 1.0)
    sf.write(tmp_path / "clip.wav", (clipped * 32767).astype(np.int16), 44100, subtype="PCM_16")
    y = load_audio(tmp_path / "clip.wav")
    assert np.abs(y).max() == 1.0 and np.abs(y).mean() > 0.5
    unclipped = StreamResampler(44100).process(np.clip(np.sin(2 * np.pi * 1000 * t), -1, 1) * 3.0, last=True)
    assert np.abs(unclipped).max() > 2.9   # a float input over full scale is left for the normaliser


def test_nan_and_inf_become_silence_and_full_scale():
    y = to_float32(np.array([np.nan, np.inf, -np.inf, 0.5], dtype=np.float64))
    assert y.tolist() == [0.0, 1.0, -1.0, 0.5]


def test_channels_first_arrays_are_recognised(speech):
    stereo = np.stack([speech, speech * 0.5])  # (2, n) as librosa gives it
    assert np.allclose(normalize(stereo, 16000), speech * 0.75)
    assert np.allclose(normalize(stereo.T, 16000, channel=1), speech * 0.5)


@pytest.mark.parametrize("bad, message", [
    (np.zeros(10, dtype=complex), "not audio"),
    (np.zeros((2, 2, 2), dtype=np.float32), "shape"),
    (np.float32(0.5), "shape"),
])
def test_arrays_that_are_not_audio_are_named(bad, message):
    with pytest.raises(AudioError, match=message):
        normalize(bad, 16000)


@pytest.mark.parametrize("rate", [0, -16000, float("nan"), 22050.5, "fast"])
def test_bad_rates_are_named(rate):
    with pytest.raises(AudioError, match="sample rate"):
        normalize(np.zeros(100, np.float32), rate)


def test_raw_pcm_bytes_with_their_rate(speech):
    at22 = resample(speech, 16000, 22050)
    pcm = (at22 * 32767).astype("<i2").tobytes()
    y = decode_pcm_bytes(pcm, RawPcm(22050))
    assert len(y) == len(speech)
    assert np.corrcoef(y, speech)[0, 1] > 0.999
    stereo = np.stack([at22, -at22], axis=1).astype("<f4").tobytes()
    assert np.allclose(decode_pcm_bytes(stereo, RawPcm(22050, "f32le", 2), channel=1), -resample(at22, 22050),
                       atol=1e-6)
    with pytest.raises(AudioError, match="whole number of 4-byte frames"):
        decode_pcm_bytes(pcm[:-2], RawPcm(22050, channels=2))
    with pytest.raises(AudioError, match="unknown raw PCM format"):
        RawPcm(16000, "mulaw")


def test_raw_pcm_file_reads_like_the_wav(tmp_path, speech):
    path = tmp_path / "call.raw"
    path.write_bytes((resample(speech, 16000, 8000) * 32767).astype("<i2").tobytes())
    raw = RawPcm(8000)
    assert probe(path, raw).duration == pytest.approx(10.0, abs=1e-3)
    blocks = np.concatenate(list(iter_16k_blocks(path, 0.1, raw=raw)))
    assert np.array_equal(blocks, load_audio(path, raw=raw))
    assert len(blocks) == len(speech)
    # the same bytes under an extension libsndfile guesses a headerless format from are still
    # headerless PCM (a review: ".vox" was refused as "has a RAW header"); a real header is refused
    for ext in ("vox", "gsm", "au", "snd", "bin"):
        other = path.with_suffix(f".{ext}")
        other.write_bytes(path.read_bytes())
        assert probe(other, raw).duration == pytest.approx(10.0, abs=1e-3)
    wav = tmp_path / "call.wav"
    sf.write(wav, speech, 16000)
    with pytest.raises(AudioError, match="has a WAV header .* not headerless PCM"):
        probe(wav, raw)


def test_a_raw_pcm_file_that_is_not_whole_frames_is_refused(tmp_path, speech):
    """A headerless file whose size is no whole number of frames was read without a word (its
    stray bytes dropped): mono s16 speech with an odd sample count read with --raw-channels 2
    gave a nonsense 'stereo' meeting. Refused as decode_pcm_bytes refuses the same bytes, naming
    the byte count and the frame size."""
    pcm = (speech[:16001] * 32767).astype("<i2").tobytes()   # 1.0000625 s of mono speech: 32002 bytes
    path = tmp_path / "call.raw"
    path.write_bytes(pcm)
    assert probe(path, RawPcm(16000)).duration == pytest.approx(16001 / 16000)   # its real format: read
    for raw, frame in ((RawPcm(16000, channels=2), 4), (RawPcm(16000, "s32le"), 4), (RawPcm(16000, "s24le"), 3)):
        with pytest.raises(AudioError) as caught:
            probe(path, raw)
        stray = 32002 % frame
        assert str(caught.value) == (
            f"{path} holds 32002 bytes, not a whole number of {frame}-byte frames ({raw.sample_format}, "
            f"{raw.channels} channel(s)): check --raw-format and --raw-channels; if they are right and the "
            f"recording was cut mid-frame, drop its last {stray} byte(s) (truncate -s {32002 - stray} {path})")
        with pytest.raises(AudioError, match=f"whole number of {frame}-byte frames"):
            decode_pcm_bytes(pcm, raw)   # the same bytes from memory: the same answer
        with pytest.raises(AudioError, match="32002 bytes"):
            load_audio(path, raw=raw)   # every reader goes through probe()
    assert len(load_audio(path, raw=RawPcm(16000))) == 16001


def test_24bit_and_float32_wav_decode(tmp_path, speech):
    for subtype in ("PCM_24", "FLOAT"):
        path = tmp_path / f"{subtype}.wav"
        sf.write(path, speech, 16000, subtype=subtype)
        assert probe(path).subtype == subtype
        assert np.abs(load_audio(path) - speech).max() < 1e-6
    import wave

    with pytest.raises(wave.Error):  # what Python's wave module says of float WAV
        wave.open(str(tmp_path / "FLOAT.wav"))


def test_float_wav_holding_unscaled_integers_is_rescaled(tmp_path, speech, caplog):
    path = tmp_path / "unscaled.wav"
    sf.write(path, speech * 32768.0, 16000, subtype="FLOAT")
    assert np.abs(load_audio(path) - speech).max() < 1e-5
    assert any("unscaled 16-bit PCM" in r.getMessage() for r in _warnings(caplog))


def test_truncated_wav_declares_more_than_it_holds(tmp_path):
    data = SAMPLE.read_bytes()
    path = tmp_path / "cut.wav"
    path.write_bytes(data[: len(data) // 3])
    info = probe(path)
    assert info.declared_duration == pytest.approx(30.0, abs=0.01)
    assert info.duration == pytest.approx(10.0, abs=0.01)
    assert len(load_audio(path)) == round(info.duration * 16000)
    assert probe(SAMPLE).declared_duration is None


def _with_sizes(tmp_path, riff: int, data_size: int) -> bytes:
    """The sample as a canonical 44-byte-header WAV with its RIFF and data sizes overwritten."""
    clean = tmp_path / "clean.wav"
    sf.write(clean, load_audio(SAMPLE), 16000, subtype="PCM_16")
    data = clean.read_bytes()
    assert data[36:40] == b"data"
    return data[:4] + struct.pack("<I", riff) + data[8:40] + struct.pack("<I", data_size) + data[44:]


@pytest.mark.parametrize("declared", [0.0, 10.0])
def test_a_wav_whose_header_was_never_finalised_is_decoded_to_its_end(tmp_path, declared):
    """A recorder that stops without closing the file leaves sizes of 0 (or of an early flush):
    libsndfile stops where the header says, so the rest is decoded with FFmpeg's ignore_length."""
    n = int(declared * 16000 * 2)  # the sample: 30 s, 16-bit mono
    path = tmp_path / "unclosed.wav"
    path.write_bytes(_with_sizes(tmp_path, n + 36 if n else 0, n))
    info = probe(path)
    assert info.unfinalized_duration == pytest.approx(declared)
    assert info.declared_duration is None
    assert info.duration == pytest.approx(30.0, abs=0.01)
    np.testing.assert_allclose(load_audio(path), load_audio(tmp_path / "clean.wav"), atol=1e-6)


@pytest.mark.parametrize("tail", ["id3", "zeros", "odd chunk without its pad byte"])
def test_valid_bytes_after_the_data_chunk_are_not_taken_for_audio(tmp_path, tail):
    """An ID3 tag appended to a WAV, zero padding, or a chunk after an odd-sized data chunk whose
    pad byte the writer left out (8-bit mono, 16001 frames) are no unfinalised header."""
    x = load_audio(SAMPLE)[:16001]
    path = tmp_path / "w.wav"
    if tail == "odd chunk without its pad byte":
        sf.write(path, x, 16000, subtype="PCM_U8")
        extra = b"_PMX" + struct.pack("<I", 6008) + b"x" * 6008
    else:
        sf.write(path, x[:16000], 16000, subtype="PCM_16")
        extra = b"ID3\x04\x00" + b"\x00" * 10000 if tail == "id3" else b"\x00" * 8192
    path.write_bytes(path.read_bytes() + extra)
    info = probe(path)
    assert info.unfinalized_duration is None and info.duration == pytest.approx(len(x) / 16000, abs=1e-3)


def test_an_unfinalised_wave_format_extensible_file_is_decoded_to_its_end(tmp_path):
    """libsndfile names WAVE_FORMAT_EXTENSIBLE files "WAVEX": 3-channel 24-bit with sizes 0."""
    path = tmp_path / "x.wav"
    x = load_audio(SAMPLE)[:32000]
    sf.write(path, np.stack([x, x, x], axis=1), 16000, subtype="PCM_24", format="WAVEX")
    data = bytearray(path.read_bytes())
    at = data.find(b"data")
    data[4:8] = data[at + 4:at + 8] = bytes(4)
    path.write_bytes(bytes(data))
    assert probe(path).unfinalized_duration == 0.0
    np.testing.assert_allclose(load_audio(path), x, atol=1e-4)


def test_a_wav_written_to_a_pipe_is_not_truncated(tmp_path):
    """ffmpeg writing to a pipe cannot go back to fill in the sizes: 0xFFFFFFFF means "to the end"."""
    path = tmp_path / "piped.wav"
    path.write_bytes(_with_sizes(tmp_path, 0xFFFFFFFF, 0xFFFFFFFF))
    info = probe(path)
    assert (info.declared_duration, info.unfinalized_duration) == (None, None)
    assert info.duration == pytest.approx(30.0, abs=0.01)
    assert len(load_audio(path)) == len(load_audio(SAMPLE))


def test_unknown_codec_is_named(tmp_path):
    fmt = struct.pack("<IHHIIHH", 16, 0x1234, 1, 16000, 32000, 2, 16)
    body = b"WAVEfmt " + fmt + b"data" + struct.pack("<I", 1000) + b"\0" * 1000
    path = tmp_path / "codec.wav"
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    with pytest.raises(AudioError, match="codec voicekit cannot decode.*convert it to WAV"):
        load_audio(path)


def test_per_channel_blocks_equal_each_channel_alone(tmp_path):
    # jfk.flac is 44.1 kHz stereo: each column, resampled together, equals that channel alone
    blocks = np.concatenate(list(iter_16k_blocks(JFK, 0.025, per_channel=True)))
    assert blocks.shape[1] == 2
    for c in (0, 1):
        assert np.array_equal(blocks[:, c], load_audio(JFK, channel=c))


@pytest.mark.parametrize("block", [1, 1200, 512, 480])  # one sample, 25 ms, 1024 bytes of int16, 10 ms
def test_48k_stream_in_odd_blocks_equals_whole_file_resampling(block):
    x48 = resample(load_audio(JFK), 16000, 48000)[: 48000 * 3]
    whole = resample(x48, 48000)
    r = StreamResampler(48000)
    parts = [r.process(x48[i:i + block], last=i + block >= len(x48)) for i in range(0, len(x48), block)]
    assert np.array_equal(np.concatenate(parts), whole)


def test_sox_made_8k_mulaw_and_44k_files_decode(tmp_path):
    """Telephone audio as a phone system writes it (8 kHz u-law), made with sox."""
    ulaw = tmp_path / "phone.wav"
    subprocess.run(["sox", str(SAMPLE), "-r", "8000", "-e", "u-law", str(ulaw)], check=True)
    info = probe(ulaw)
    assert (info.sample_rate, info.subtype) == (8000, "ULAW")
    y = load_audio(ulaw)
    x = load_audio(SAMPLE)
    assert abs(len(y) - len(x)) <= 2
    assert np.corrcoef(resample(x, 16000, 8000), resample(y, 16000, 8000))[0, 1] > 0.95


# --- fuzz: the normalisation entry point never fails but with AudioError --------------------

DTYPES = st.sampled_from([np.int16, np.int32, np.uint8, np.float16, np.float32, np.float64])
RATES = st.sampled_from([8000, 11025, 16000, 22050, 32000, 44100, 48000, 96000]) | st.integers(1000, 200000)


@st.composite
def audio_arrays(draw):
    dtype = draw(DTYPES)
    n = draw(st.integers(0, 3000))
    shape = draw(st.sampled_from([(n,), (n, 1), (n, 2), (n, 6), (2, n)]))
    if np.dtype(dtype).kind == "f":
        width = np.dtype(dtype).itemsize * 8
        elements = (st.floats(-60000, 60000, width=width) | st.floats(-1.5, 1.5, width=width)
                    | st.sampled_from([np.nan, np.inf, -np.inf]))
    else:
        elements = None
    return draw(hnp.arrays(dtype, shape, elements=elements))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(audio_arrays(), RATES)
def test_fuzz_normalize_gives_bounded_mono_16k_float32(samples, rate):
    try:
        y = normalize(samples, rate)
    except AudioError as exc:
        assert str(exc)
        return
    n = samples.shape[0] if samples.ndim == 1 or not (samples.shape[0] <= 8 and samples.shape[1] > samples.shape[0]) \
        else samples.shape[1]
    assert y.dtype == np.float32 and y.ndim == 1
    assert np.isfinite(y).all()
    assert np.abs(y).max(initial=0.0) <= 1.0  # a full-scale step rings past 1.0 when resampled: clipped
    assert abs(len(y) - n * 16000 / rate) <= 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5000), st.sampled_from([8000, 22050, 44100, 48000]))
def test_fuzz_block_size_never_changes_the_resampled_signal(block, rate):
    x = load_audio(SAMPLE)[:16000]
    xr = resample(x, 16000, rate)
    r = StreamResampler(rate)
    parts = [r.process(xr[i:i + block], last=i + block >= len(xr)) for i in range(0, len(xr), block)]
    assert np.array_equal(np.concatenate(parts), resample(xr, rate))


def test_raw_pcm_bytes_decode_to_their_float_values():
    """decode_pcm_bytes reads 16-bit little-endian PCM as int16 / 32768 (libsndfile's scaling)."""
    values = np.arange(-5, 5, dtype=np.int16) * 1000
    out = decode_pcm_bytes(values.astype("<i2").tobytes(), RawPcm(16000))
    assert out.dtype == np.float32
    assert np.array_equal(out, values.astype(np.float32) / 32768)


def test_telephone_band_audio_is_told_from_wideband():
    """The pyannote sample is an 8 kHz call in a 16 kHz file; JFK and the falcon recording are
    wideband, and become telephone-band once resampled to 8 kHz and back."""
    falcon = load_audio(EVAL / "picovoice_falcon" / "test.wav")
    sample, jfk = load_audio(SAMPLE), load_audio(JFK)
    shares = {name: high_band_share(x) for name, x in
              [("sample", sample), ("jfk", jfk), ("falcon", falcon),
               ("falcon at 8 kHz", resample(resample(falcon, 16000, 8000), 8000))]}
    print({k: f"{v:.1e}" for k, v in shares.items()})
    assert shares["sample"] < 1e-6 and shares["falcon at 8 kHz"] < 1e-9   # 2.5e-7 measured
    assert shares["jfk"] > 2e-5 and shares["falcon"] > 1e-3                  # 4.7e-5, 2.5e-2
    assert is_telephone_band(sample) and not is_telephone_band(jfk)
    assert high_band_share(np.zeros(16000, np.float32)) == 1.0   # silence is not telephone audio
    assert high_band_share(sample[:100]) == 1.0                  # nor 6 ms of it


def test_a_spike_after_scaled_audio_is_clipped_and_never_silences_the_rest(speech):
    """A stream switched to "unscaled 16-bit PCM" on its first block peaking above 2.0 even after
    ordinary scaled audio, so every later block came out about 32768 times too quiet."""
    norm = PcmNormalizer("stream")
    first, later = speech[:1600].astype(np.float32), speech[1600:3200].astype(np.float32)
    spike = later.copy()
    spike[10] = 2.5
    assert np.array_equal(norm(first), first)
    assert norm(spike)[10] == 1.0 and not norm.unscaled
    assert np.array_equal(norm(later), later)


def test_a_downmix_that_cancels_is_told_from_one_that_does_not(tmp_path):
    """downmix_level: jfk.flac holds one voice on both channels (1.0), stereo_diarization.wav two
    people, one a channel (about 0.7), and jfk with its second channel phase-inverted cancels (0)."""
    from voicekit.audio import CANCELLING_DOWNMIX, downmix_level

    x, rate = sf.read(JFK, dtype="float32")
    sf.write(tmp_path / "inverted.wav", np.stack([x[:, 0], -x[:, 0]], axis=1), rate)
    same, two, inverted = downmix_level(JFK), downmix_level(STEREO), downmix_level(tmp_path / "inverted.wav")
    print(f"downmix level: same voice {same:.3f}, two people {two:.3f}, inverted {inverted:.2e}")
    assert same > 0.98 and 0.5 < two < 0.9 and inverted < 1e-3 < CANCELLING_DOWNMIX
    assert downmix_level(SAMPLE) is None   # mono
