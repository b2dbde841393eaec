"""Decoding, normalisation and resampling on real recordings."""

import numpy as np
import pytest
import soundfile as sf

from _pipeline_support import EVAL, needs_eval
from voicekit.audio import AudioError, StreamResampler, downmix, iter_16k_blocks, load_audio, probe, resample, to_float32

pytestmark = needs_eval


def test_jfk_flac_44k_stereo_24bit_decodes_to_16k_mono():
    info = probe(EVAL / "faster_whisper" / "jfk.flac")
    assert (info.sample_rate, info.channels) == (44100, 2)
    assert info.subtype == "PCM_24"
    x = load_audio(EVAL / "faster_whisper" / "jfk.flac")
    assert x.dtype == np.float32 and x.ndim == 1
    assert abs(len(x) / 16000 - info.duration) < 0.01
    assert 0.1 < np.abs(x).max() <= 1.0


def test_block_resampling_equals_whole_file_sample_for_sample():
    native, rate = sf.read(EVAL / "faster_whisper" / "jfk.flac", dtype="float32")
    mono = downmix(native)
    whole = resample(mono, rate)
    r = StreamResampler(rate)
    sizes = [441, 1, 1024, 4410, 7, 48000]
    parts, i, k = [], 0, 0
    while i < len(mono):
        n = sizes[k % len(sizes)]
        parts.append(r.process(mono[i:i + n], last=i + n >= len(mono)))
        i += n
        k += 1
    blocks = np.concatenate(parts)
    assert len(blocks) == len(whole)
    assert np.array_equal(blocks, whole)


def test_the_stream_resampler_scales_integer_pcm_as_the_pipeline_does():
    """A library trial: int16 blocks from a capture callback came out of StreamResampler as
    float32 on the int16 scale (peak 19999.6), which the pipeline then had to take for unscaled
    PCM with a warning. Integer PCM is scaled by its full scale first; a dtype that is not audio
    is refused."""
    native, rate = sf.read(EVAL / "faster_whisper" / "jfk.flac", dtype="int16", always_2d=True)
    native = native[:, 0]
    as_int = StreamResampler(rate).process(native, last=True)
    as_float = StreamResampler(rate).process(native.astype(np.float32) / 32768.0, last=True)
    assert as_int.dtype == np.float32 and np.array_equal(as_int, as_float)
    assert 0.1 < np.abs(as_int).max() <= 1.0
    with pytest.raises(AudioError, match="samples of dtype int64 are not audio"):
        StreamResampler(rate).process(native.astype(np.int64))


def test_iter_blocks_equals_load_audio():
    path = EVAL / "faster_whisper" / "jfk.flac"
    assert np.array_equal(np.concatenate(list(iter_16k_blocks(path, 0.04))), load_audio(path))


def test_non_ascii_path_and_float32_wav():
    path = EVAL / "ami_debug" / "trñ00.wav"
    assert probe(path).subtype == "FLOAT"
    assert abs(len(load_audio(path)) / 16000 - 30.0) < 0.05


def test_mp3_decodes():
    x = load_audio(EVAL / "faster_whisper" / "hotwords.mp3")
    assert 3.5 < len(x) / 16000 < 5.0


def test_mp3_decodes_without_writing_to_the_terminal(capfd):
    # libsndfile's mpg123 wrote "part2_3_length (704) too large for available bit count" to fd 2
    # for each damaged frame of this file (165 lines); PyAV decodes the same samples quietly
    import soundfile as sf

    from voicekit.audio import read_native_blocks

    path = EVAL / "faster_whisper" / "multilingual.mp3"
    blocks = [(b, rate) for b, rate in read_native_blocks(path)]
    assert "mpg123" not in capfd.readouterr().err
    decoded = np.concatenate([b for b, _ in blocks])
    reference, rate = sf.read(str(path), dtype="float32", always_2d=True)
    assert {r for _, r in blocks} == {rate} == {24000}
    assert decoded.shape == reference.shape and np.abs(decoded - reference).max() < 1e-5


@pytest.mark.parametrize("name, rate, channels, duration", [("hotwords.mp3", 44100, 2, 4.0),
                                                             ("multilingual.mp3", 24000, 1, 59.9)])
def test_mp3_is_probed_without_libsndfile_and_gives_what_libsndfile_gave(tmp_path, capfd, name, rate, channels,
                                                                          duration):
    """probe() read MP3 headers with libsndfile's mpg123, which wrote to fd 2 ("Warning: Xing stream
    size off by more than 1%…" for an MP3 cut short, "Note: Illegal Audio-MPEG-Header…" for
    damage); it reads them with PyAV now, with the values libsndfile gave (measured before the change:
    hotwords.mp3 44100 Hz, 2 channels, 4.0 s; multilingual.mp3 24000 Hz, 1 channel, 59.9 s; both
    MPEG_LAYER_III). An MP3 cut in half keeps its Xing header's 4.0 s (what flags it as truncated)."""
    data = (EVAL / "faster_whisper" / name).read_bytes()
    info = probe(EVAL / "faster_whisper" / name)
    assert (info.sample_rate, info.channels, info.duration, info.subtype) == \
        (rate, channels, duration, "MPEG_LAYER_III")
    assert (info.declared_duration, info.unfinalized_duration) == (None, None)
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[: len(data) // 2])
    assert probe(cut).duration == duration   # its Xing header's count, not the half it holds
    assert capfd.readouterr().err == ""


def test_a_wav_named_mp3_is_still_read_by_libsndfile(tmp_path):
    """Only MPEG audio goes to PyAV: a WAV misnamed .mp3 (its RIFF header) is probed as before."""
    import dataclasses

    wav = EVAL / "faster_whisper" / "stereo_diarization.wav"
    path = tmp_path / "meeting.mp3"
    path.write_bytes(wav.read_bytes())
    info = probe(path)
    assert (info.sample_rate, info.channels, info.subtype) == (16000, 2, "PCM_16")
    assert info == dataclasses.replace(probe(wav), path=path)


def test_to_float32_scales_integer_pcm_and_unscaled_floats(caplog):
    assert to_float32(np.array([16384, -32768], dtype=np.int16)).tolist() == [0.5, -1.0]
    unscaled = np.array([0.0, 16384.0, -8192.0], dtype=np.float32)
    assert np.allclose(to_float32(unscaled), [0.0, 0.5, -0.25])
    assert "unscaled 16-bit PCM" in caplog.text
    assert to_float32(np.array([1.5, -0.2], dtype=np.float64)).tolist() == pytest.approx([1.0, -0.2])
    assert to_float32(np.array([0.25], dtype=np.float16)).dtype == np.float32


def _write(path, data):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.wav", "no such file"),
    (lambda p: p, "is a directory"),
    (lambda p: _write(p / "empty.wav", b""), "empty"),
    (lambda p: _write(p / "notes.wav", b"meeting notes\n" * 50), "not an audio file"),
    (lambda p: _write(p / "cut.wav", (EVAL / "pyannote_sample" / "sample.wav").read_bytes()[:30]), "is damaged or not a recording"),
])
def test_bad_files_get_one_clear_error(tmp_path, make, message):
    with pytest.raises(AudioError, match=message):
        load_audio(make(tmp_path))


def test_channel_out_of_range_is_named():
    with pytest.raises(AudioError, match="has 2 channels"):
        load_audio(EVAL / "faster_whisper" / "stereo_diarization.wav", channel=5)


def _write_m4a(path, x):
    """``x`` ((n,) float32 at 16 kHz) as AAC in an MP4 container, its index (moov) at the end."""
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("aac", rate=16000)
        stream.layout = "mono"
        for i in range(0, len(x), 1024):
            frame = av.AudioFrame.from_ndarray(x[i:i + 1024][None, :], format="flt", layout="mono")
            frame.sample_rate = 16000
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def test_m4a_aac_decodes_through_pyav(tmp_path):
    """libsndfile cannot read AAC in MP4: PyAV decodes it. Encoded here from the real sample."""
    x = load_audio(EVAL / "pyannote_sample" / "sample.wav")
    path = _write_m4a(tmp_path / "meeting.m4a", x)
    info = probe(path)
    assert (info.sample_rate, info.channels, info.subtype) == (16000, 1, "aac")
    y = load_audio(path)
    assert abs(len(y) - len(x)) <= 2048  # AAC priming and padding
    n = len(x) - 4096
    lag = max(range(0, 2048), key=lambda k: float(np.dot(x[:n], y[k:k + n])))
    assert np.corrcoef(x[:n], y[lag:lag + n])[0, 1] > 0.99


def test_an_m4a_cut_before_its_index_is_called_damaged_not_convertible(tmp_path):
    """A trial: an M4A whose index (moov, at the end) was cut off was "not an audio file voicekit can
    decode ...; convert it to WAV or FLAC (e.g. ffmpeg ...)", and FFmpeg is what failed to read it."""
    whole = _write_m4a(tmp_path / "whole.m4a", load_audio(EVAL / "pyannote_sample" / "sample.wav"))
    cut = _write(tmp_path / "cut.m4a", whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(AudioError) as e:
        probe(cut)
    assert str(e.value).startswith(f"{cut} is damaged or not a recording: neither libsndfile nor FFmpeg can read it")
    assert str(e.value).endswith("give an intact copy of the recording") and "convert" not in str(e.value)


def test_a_recording_with_several_audio_tracks_names_the_one_transcribed(tmp_path, caplog):
    """A long-recordings trial: a screen recording with a silent first track and the speech on
    the second gave "the VAD heard no speech", and nothing said that a second track was there."""
    import av

    from voicekit.sources import FileSource

    x = load_audio(EVAL / "picovoice_falcon" / "test.wav")[:16000 * 4]
    path = tmp_path / "screen recording.mp4"
    with av.open(str(path), "w") as out:
        tracks = [out.add_stream("aac", rate=16000), out.add_stream("aac", rate=16000)]
        for stream in tracks:
            stream.layout = "mono"
        for i in range(0, len(x), 1024):
            for stream, samples in zip(tracks, (np.zeros_like(x[i:i + 1024]), x[i:i + 1024])):
                frame = av.AudioFrame.from_ndarray(samples[None, :], format="flt", layout="mono")
                frame.sample_rate = 16000
                for packet in stream.encode(frame):
                    out.mux(packet)
        for stream in tracks:
            for packet in stream.encode(None):
                out.mux(packet)
    info = probe(path)
    assert info.other_tracks == ("track 2 (aac, 1 ch, 16000 Hz)",)
    assert not load_audio(path).any()   # track 1, the silent one, is what is decoded
    with caplog.at_level("WARNING", logger="voicekit.sources"):
        FileSource(path)
    assert [r.getMessage() for r in caplog.records if r.name == "voicekit.sources"] == [
        f"{path} holds 2 audio tracks: track 1 (aac, 1 ch, 16000 Hz) is transcribed, not track 2 (aac, 1 ch, "
        "16000 Hz); to transcribe another, extract it first (ffmpeg -i IN -map 0:a:1 -ar 16000 OUT.wav takes "
        "track 2)"]
    assert probe(EVAL / "picovoice_falcon" / "test.wav").other_tracks == ()


def test_damaged_packets_of_an_m4a_are_skipped_as_silence_and_the_rest_keeps_its_times(tmp_path, caplog):
    """A trial: 5 flipped bytes in a 42 s M4A stopped the replay at 11.8 s ("truncated"), and an
    MP3 with 2 damaged frames at 8.4 s; FFmpeg decodes the packets around them. Each packet the
    decoder refuses is read as silence of its length: the audio after it is where it was."""
    import av

    whole = _write_m4a(tmp_path / "whole.m4a", load_audio(EVAL / "pyannote_sample" / "sample.wav"))
    with av.open(str(whole)) as c:
        packets = [(float(p.pts * p.time_base), p.pos, p.size) for p in c.demux(c.streams.audio[0]) if p.size]
    data = bytearray(whole.read_bytes())
    for t in (5.0, 12.0, 20.0):
        _, pos, size = min(packets, key=lambda p: abs(p[0] - t))
        data[pos:pos + size] = b"\xff" * size
    damaged = _write(tmp_path / "damaged.m4a", bytes(data))
    with caplog.at_level("WARNING", logger="voicekit.audio"):
        y = load_audio(damaged)
    x = load_audio(whole)
    assert len(y) == len(x)
    assert [r.getMessage() for r in caplog.records if r.name == "voicekit.audio"] == [
        f"{damaged}: 3 damaged packet(s) skipped, at 5.0 s, 12.0 s, 20.0 s: 0.19 s of audio read as silence, "
        "the rest transcribed at its times"]
    after = np.s_[21 * 16000:29 * 16000]   # a second after the last damage: the same samples, at the same times
    assert np.corrcoef(x[after], y[after])[0, 1] > 0.999


@pytest.mark.parametrize("rate", [44100.7, float("nan"), 0, -8000, "16000"])
def test_a_sample_rate_that_is_not_a_positive_whole_number_is_refused(rate):
    """An API trial: StreamResampler(44100.7) ran as 44100 Hz without a word, and a NaN rate
    raised a bare "cannot convert float NaN to integer"."""
    from voicekit.audio import StreamResampler

    with pytest.raises(AudioError, match="sample rate must be a positive whole number of Hz"):
        StreamResampler(rate)
    assert StreamResampler(44100.0).in_rate == 44100   # a whole number given as a float is fine
