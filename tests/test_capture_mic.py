"""`voicekit devices` and `voicekit mic`, for real: a user-mode PulseAudio with a virtual microphone
(../shared/tools/virtual-mic.sh), a real recording played into it, compared with a replay.

Skipped (with the reason) only when PulseAudio is not installed and VOICEKIT_REQUIRE_MIC is unset;
CI sets VOICEKIT_REQUIRE_MIC=1 so a missing dependency fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from _capture_common import FALCON, ROOT, TOOLS, CliRun, components, required, text_of

SR = 16000
FALCON_SECONDS = 18.5   # the recording's length


def _unavailable(reason: str):
    if required("VOICEKIT_REQUIRE_MIC"):
        pytest.fail(f"VOICEKIT_REQUIRE_MIC is set but {reason}")
    pytest.skip(f"{reason}; install: apt-get install pulseaudio pulseaudio-utils libasound2-plugins "
                "libportaudio2 && pip install sounddevice (VOICEKIT_REQUIRE_MIC=1 makes this a failure)")


@pytest.fixture(scope="module")
def virtual_mic(tmp_path_factory):
    """A private PulseAudio with the virtual microphone "meetmic"; PULSE_SERVER set for this process."""
    if shutil.which("pulseaudio") is None or shutil.which("paplay") is None:
        _unavailable("PulseAudio is not installed")
    try:
        import sounddevice  # noqa: F401
    except (ImportError, OSError) as exc:
        _unavailable(f"sounddevice/PortAudio cannot be imported ({exc})")
    d = tmp_path_factory.mktemp("vmic")
    run = subprocess.run([str(TOOLS / "virtual-mic.sh"), "start", str(d)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, f"virtual-mic.sh start failed: {run.stdout} {run.stderr}"
    saved = dict(os.environ)
    line = run.stdout.strip().splitlines()[-1]
    assert line.startswith("export "), line
    for item in line[len("export "):].split():
        key, _, value = item.partition("=")
        os.environ[key] = value
    from voicekit.capture.mic import rescan

    rescan()  # PortAudio enumerates devices once; PulseAudio's devices appear now
    yield d
    subprocess.run([str(TOOLS / "virtual-mic.sh"), "stop", str(d)], capture_output=True, timeout=30)
    os.environ.clear()
    os.environ.update(saved)


def play(path, seconds: float | None = None) -> None:
    """Speak a recording into the virtual microphone (blocks until it has played)."""
    cmd = ["paplay", "--device=meetsink", str(path)]
    if seconds is not None:
        cmd = ["timeout", str(seconds)] + cmd
    subprocess.run(cmd, check=seconds is None, timeout=120)


def speak_then_stop(run: CliRun, seconds: float | None = None) -> tuple[int, str]:
    """Once ``run`` (a ``voicekit mic`` started with ``marks=["audio flowing"]``) hears audio, speak
    the falcon recording into the microphone (cut off after ``seconds``; whole, then 1 s for the
    last words' hangover), then Ctrl-C. Returns the exit code and stdout; the process is gone."""
    try:
        assert run.seen("audio flowing").wait(90), run.text
        play(FALCON, seconds)
        if seconds is None:
            time.sleep(1.0)
        run.proc.send_signal(signal.SIGINT)
        rc = run.proc.wait(120)
        return rc, run.proc.stdout.read()
    finally:
        run.finish()


def capture_offset(captured: np.ndarray, original: np.ndarray) -> float:
    """Seconds from the start of the capture to where the recording starts in it (cross-correlation)."""
    from scipy.signal import correlate

    c = correlate(captured.astype(np.float64), original.astype(np.float64), mode="valid", method="fft")
    return float(np.argmax(c)) / SR


def test_devices_lists_the_virtual_microphone(virtual_mic):
    from voicekit.capture.mic import MicSource, list_input_devices, native_channels, resolve_device

    devices = list_input_devices()
    names = [d.name for d in devices]
    assert "pulse" in names and "default" in names, names
    pulse = resolve_device("pulse")
    assert pulse.sample_rate == 44100          # not 16 kHz: capture must resample
    assert pulse.channels == 32 and native_channels(pulse) == 2  # the ALSA plugin's virtual channels
    assert resolve_device(str(pulse.index)) == pulse
    from voicekit.capture import CaptureError

    with pytest.raises(CaptureError, match="no input device named 'nonexistent'; `voicekit devices` lists them"):
        MicSource("nonexistent")
    with pytest.raises(CaptureError, match="the compute device is --compute-device cpu"):   # replay's --device
        MicSource("cpu")
    out = subprocess.run([sys.executable, "-m", "voicekit.cli", "devices"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pulse" in out.stdout and "44100 Hz" in out.stdout, out.stdout


def test_mic_matches_a_replay_of_the_same_recording(virtual_mic):
    """Play a 3-speaker recording into the virtual mic: same words (WER <= 10 %) at the same times
    (within 0.3 s of a replay, once the measured capture offset is removed), same speakers."""
    import difflib

    from voicekit.audio import load_audio
    from voicekit.capture.mic import MicSource
    from voicekit.evaluation import wer
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.sources import FileSource

    comps = components()
    replay = Pipeline(PipelineOptions(), comps).run(FileSource(FALCON)).turns
    assert len({t.speaker for t in replay}) >= 2 and "crocodile" in text_of(replay)

    source = MicSource("pulse", keep_audio=True)
    assert source.sample_rate == 44100 and source.channels == 2
    pipe = Pipeline(PipelineOptions(), comps, realtime_clock=True)
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = pipe.run(source, channel="mic")
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert source.wait_first_callback(10.0), "no audio callback within 10 s of starting the stream"
    first_delay = source.first_callback_at - source.started_at
    play(FALCON)
    time.sleep(1.5)          # the tail reaches the capture, and the hangover closes the last utterance
    source.stop()
    thread.join(120)
    assert not thread.is_alive(), "the pipeline did not finish after stop()"
    assert "error" not in box, box.get("error")
    live = box["result"].turns

    offset = capture_offset(source.audio, load_audio(FALCON))
    print(f"\nfirst callback {first_delay:.2f} s after start; recording starts {offset:.3f} s into the "
          f"capture; {source.report()}")
    for a, b in zip(replay, live):
        print(f"  replay {a.start:6.2f}-{a.end:6.2f} {a.speaker}: {a.text}\n"
              f"  mic    {b.start - offset:6.2f}-{b.end - offset:6.2f} {b.speaker}: {b.text}")
    assert 0.0 < offset < 10.0
    assert source.feed.overflows == 0
    assert source.samples_16k / SR > 18.6
    assert all(t.channel == "mic" for t in live)

    error = wer(text_of(replay), text_of(live))
    assert error <= 0.10, (error, text_of(replay), text_of(live))
    # the same words at the same times: the capture path delivers the recording's audio; words
    # are matched after lower-casing and dropping punctuation (Whisper may write "begins!")
    replay_words = [w for t in replay for w in t.words]
    live_words = [w for t in live for w in t.words]

    def key(w) -> str:  # noqa: ANN001 - a Word
        return "".join(c for c in w.text.lower() if c.isalnum())

    matcher = difflib.SequenceMatcher(a=[key(w) for w in replay_words], b=[key(w) for w in live_words],
                                      autojunk=False)
    pairs = [(replay_words[block.a + k], live_words[block.b + k])
             for block in matcher.get_matching_blocks() for k in range(block.size)]
    assert len(pairs) >= 0.9 * len(replay_words), (len(pairs), len(replay_words))
    for a, b in pairs:
        assert abs((b.start - offset) - a.start) <= 0.3, (a, b, offset)
        assert abs((b.end - offset) - a.end) <= 0.3, (a, b, offset)
    # speakers: the diarizer sees the capture 0.21 s or so off the recording's 16 kHz grid, so its
    # 1 s windows differ; a speaker change inside an utterance sits near its threshold and can
    # come out differently (one CI run split "This is what a | crocodile sounds like…" into a new
    # speaker, three did not): the first turn and the number of people, within one, must hold
    assert live[0].speaker == replay[0].speaker  # its words: the WER above (Whisper may punctuate "begins!")
    assert abs(len({t.speaker for t in live}) - len({t.speaker for t in replay})) <= 1   # 3 people
    assert all(b.emitted_at is not None and b.emitted_at >= b.end for b in live)


def test_mic_cli_ctrl_c_commits_the_open_utterance(virtual_mic, tmp_path):
    """`voicekit mic`, Ctrl-C in the middle of the third speaker: that utterance is committed and
    every output is written; exit code 0."""
    out = tmp_path / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet"], marks=["audio flowing"])
    rc, _ = speak_then_stop(run, seconds=16.0)   # cut off at 16 s, inside the third speaker's words (12.6-18.2 s)
    text = run.text
    assert rc == 0, text
    assert "stopping: committing the utterances heard so far (Ctrl-C again to abort)" in text, text
    assert "input overflows" in text and "queue overflows 0" in text, text
    data = json.loads((out / "meeting.json").read_text())
    for ext in ("rttm", "srt", "vtt", "txt", "sqlite"):
        assert (out / f"meeting.{ext}").is_file()
    turns = data["turns"]
    assert [t["channel"] for t in turns] == ["mic"] * len(turns)
    assert "crocodile" in " ".join(t["text"] for t in turns).lower()
    last = turns[-1]["text"].lower()
    assert "ladies and gentlemen" in last, turns
    assert "thank you" not in last            # the recording was cut before its last words
    assert len({t["speaker"] for t in turns}) >= 2


def test_mic_cli_a_quick_double_ctrl_c_aborts_and_exits(virtual_mic, tmp_path):
    """A new-user trial: two Ctrl-C 0.05 s apart wrote the outputs, then `voicekit mic` hung for
    good at exit (PortAudio's Pa_Terminate joining an audio thread the stream's closer thread had
    joined). The second Ctrl-C aborts: outputs written, exit code 130. Whether the second Ctrl-C
    lands while the stream closes depends on timing (it did 3 times of 3 from a shell, not from
    here): the race itself is pinned by the next test."""
    out = tmp_path / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet", "--keep-embeddings"], marks=["audio flowing"])
    try:
        assert run.seen("audio flowing").wait(90), run.text
        play(FALCON, 15.0)
        run.proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        run.proc.send_signal(signal.SIGINT)
        try:
            rc = run.proc.wait(60)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            pytest.fail(f"voicekit mic did not exit within 60 s of the second Ctrl-C: {run.text}")
    finally:
        run.finish()
    assert rc == 130, run.text
    assert "aborted at " in run.text and (out / "meeting.json").is_file(), run.text


def test_a_ctrl_c_while_the_stream_closes_leaves_the_stream_to_its_closer(virtual_mic, monkeypatch):
    """The race behind the hang above, pinned: a Ctrl-C lands while the source waits for the thread
    that stops and closes the stream (PulseAudio's stop can take seconds). The closer goes on, so
    sounddevice's exit handler must not close the same stream again (`_leave_to_closer`). Before,
    the wait was a Thread.join, which CPython 3.11 reports finished once a signal interrupts it
    (bpo-45274): is_alive() said False, the exit handler stayed, and the process hung at exit."""
    from voicekit.capture import mic

    left = []
    monkeypatch.setattr(mic, "_leave_to_closer", lambda: left.append(True))
    stopping = threading.Event()

    class SlowStream:
        def stop(self):
            stopping.set()
            time.sleep(1.0)

        def close(self):
            pass

    source = mic.MicSource(device="pulse")
    source._stream = SlowStream()

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            source._close()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert stopping.is_set() and left == [True]


def test_mic_append_goes_on_with_the_meeting(virtual_mic, tmp_path):
    """A meeting whose capture stopped (a dropped connection, a crash) goes on with `mic --append`:
    the same recording spoken twice, in two sessions that keep their speakers' embeddings. The
    second session's turns come after the first session's audio in meeting time, its voices keep
    the labels the first session gave them, and `export --refine` re-clusters both sessions."""
    from voicekit.cli import main

    out = tmp_path / "meeting"
    texts = []
    for extra in (["--append"], ["--append"]):   # the first: onto nothing yet, a new meeting
        run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet", "--keep-embeddings", "--session", "local",
                      *extra], marks=["audio flowing"])
        rc, _ = speak_then_stop(run)
        assert rc == 0, run.text
        texts.append(run.text)
    assert "holds no meeting to go on with (no turn stored): a new meeting starts" in texts[0], texts[0]
    assert "going on with the meeting in" in texts[1] and "known by voice" in texts[1], texts[1]
    assert "this session: " in texts[1] and "this session: " not in texts[0]
    # the live session's new conversation began with session 1's turns, sent again for context
    assert "an earlier run delivered, sent again for context" in texts[1] and "again for context" not in texts[0]
    data = json.loads((out / "meeting.json").read_text())
    sessions = data["meeting"]["sessions"]
    at = sessions[1]["start_time"]
    assert [s["start_time"] for s in sessions] == [0.0, at] and at >= FALCON_SECONDS
    assert data["meeting"]["started"] == sessions[0]["started"] < sessions[1]["started"]
    assert data["meeting"]["duration"] >= at + FALCON_SECONDS
    first = [t for t in data["turns"] if t["end"] <= at]
    second = [t for t in data["turns"] if t["start"] >= at]
    print("session 1:", [(t["start"], t["end"], t["speaker"]) for t in first])
    print(f"session 2 (from {at} s):", [(t["start"], t["end"], t["speaker"]) for t in second])
    assert len(first) + len(second) == len(data["turns"]) and len(first) >= 3 and len(second) >= 3
    speakers = [t["speaker"] for t in first]
    assert len(set(speakers)) >= 2
    # the same voices again: each turn of the second session has the label the first session gave
    # the same stretch of the recording (the turn it overlaps most). Not the order of first labels:
    # the live diarization sometimes splits the second speaker's turn at 7.7 s into a fourth label,
    # in either session, which changes that order without breaking the continuity tested here.
    def first_label(turn: dict) -> str:
        def overlap(t: dict) -> float:
            return min(t["end"], turn["end"] - at) - max(t["start"], turn["start"] - at)
        return max(first, key=overlap)["speaker"]

    assert [t["speaker"] for t in second] == [first_label(t) for t in second]
    assert len({t["speaker"] for t in second}) >= 2
    assert main(["export", str(out), "--refine"]) == 0
    refined = json.loads((out / "meeting.refined.json").read_text())["turns"]
    # every live turn is in the refined file: by its id, or in a refined turn that joins it (live_ids)
    assert {i for t in refined for i in t.get("live_ids", [t["id"]])} == {t["id"] for t in data["turns"]}
    # the three voices of the recording, and no label the live meeting did not have: when the live
    # diarization split a turn into a fourth label in one session only, the refinement may rejoin it
    live_labels = {t["speaker"] for t in data["turns"]}
    assert 3 <= len({t["speaker"] for t in refined}) <= len(live_labels), (refined, live_labels)


def test_mic_feeds_a_live_model_session(virtual_mic, tmp_path):
    """`voicekit mic --session local`: the meeting heard on the microphone goes into a live model
    session as it happens, each committed turn one item, labelled once two people have spoken
    (attribution.md A2/A3); what a provider would be sent is in OUT/session.jsonl."""
    out = tmp_path / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet", "--session", "local"], marks=["audio flowing"])
    rc, _ = speak_then_stop(run)
    assert rc == 0, run.text
    assert f"the local session's events (what a live model would have received): {out / 'session.jsonl'}" in run.text
    turns = json.loads((out / "meeting.json").read_text())["turns"]
    events = [json.loads(line) for line in (out / "session.jsonl").read_text(encoding="utf-8").splitlines()]
    items = [e["item"] for e in events if e["type"] == "conversation.item.create"]
    print([part["text"] for item in items for part in item["content"]])
    assert events[0]["type"] == "session.update" and len(turns) >= 3
    texts = [" ".join(part["text"] for part in item["content"]) for item in items]
    assert len(items) == len(turns) and all(t["text"] in x for t, x in zip(turns, texts))
    speakers = [t["speaker"] for t in turns]
    second = next(i for i, sp in enumerate(speakers) if sp != speakers[0])
    assert all(f"{t['speaker']}:" in x or f'"{t["speaker"]}"' in x for t, x in zip(turns[second:], texts[second:]))


def test_mic_decides_who_answers_each_turn_live(virtual_mic, tmp_path):
    """`voicekit mic --members members.yaml --explain`: the turn-taking ladder runs on every turn
    heard on the microphone, as with a replay (docs/turn-taking.md); each turn's line is followed
    by its decision, and the count line ends the meeting."""
    members = tmp_path / "members.yaml"
    members.write_text("floor: always\nmembers:\n  - name: Iris\n    instructions: You are Iris.\n"
                       "  - name: Elena\n    instructions: You are Elena.\n    answer_only: [Diane]\n",
                       encoding="utf-8")
    out = tmp_path / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--members", members, "--explain"],
                 marks=["audio flowing"])
    rc, stdout = speak_then_stop(run)
    assert rc == 0, run.text
    print(stdout)
    from voicekit.cli import speak_decisions
    from voicekit.store import MeetingStore

    lines = stdout.splitlines()
    decisions = [line.strip() for line in lines if line.startswith("    [")]   # the indented rung line
    # the same ladder over the committed turns, after the meeting, decides each the same way
    store = MeetingStore(out / "meeting.sqlite")
    again = speak_decisions(members)
    for t in store.turns():
        again(t)
    store.close()
    expected = [f"[{s.decision.decided_by.value}] -> Iris" for s in again.steps]
    assert len(expected) >= 3 and decisions == expected, (decisions, expected)
    # no one is named and no director is set: every turn goes to Iris, the one member who may
    # answer it (Elena answers only Diane): by T5, or by T3 for a short turn right after her
    assert {s.decision.decided_by.value for s in again.steps} <= {"fallback", "continuation"}
    assert lines[-2] == again.summary()   # then the note that no model was called (the first turn is T5's)
    assert f"answered: Iris {len(expected)}; excluded by speak policy: Elena {len(expected)}; answer_only names " \
           "nobody who spoke: Diane (Elena); the speakers: Speaker A" in lines[-2]
    assert lines[-1].startswith("(no model is called here: each `fallback` is the member that answered least")


def private_audio_server(d) -> dict[str, str]:
    """Start a second virtual microphone's PulseAudio in folder ``d`` (the module's stays up); the
    environment that points a subprocess at it."""
    run = subprocess.run([str(TOOLS / "virtual-mic.sh"), "start", str(d)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    env = dict(os.environ)
    for item in run.stdout.strip().splitlines()[-1][len("export "):].split():
        key, _, value = item.partition("=")
        env[key] = value
    return env


def test_mic_cli_ends_with_an_error_when_the_device_is_lost(virtual_mic, tmp_path_factory):
    """The audio server goes away mid-meeting (an unplugged USB microphone looks the same to
    PortAudio): the capture ends by itself within seconds, what was heard is committed and written,
    and the run says so and exits 1 (before, it waited silently for a Ctrl-C and exited 0)."""
    d = tmp_path_factory.mktemp("vmic-lost")   # a second, private audio server: the module's stays up
    env = private_audio_server(d)
    out = tmp_path_factory.mktemp("lost") / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet"], env=env, marks=["audio flowing"])
    try:
        assert run.seen("audio flowing").wait(90), run.text
        subprocess.run(["paplay", "--device=meetsink", str(FALCON)], env=env, timeout=60,
                       check=True)   # all three speakers, 19 s
        time.sleep(1.0)
        subprocess.run([str(TOOLS / "virtual-mic.sh"), "stop", str(d)], capture_output=True, timeout=30)
        rc = run.proc.wait(60)   # no signal: the watchdog ends the meeting
    finally:
        run.finish()
    text = run.text
    print(text)
    assert rc == 1, text
    assert "stopped delivering audio" in text and "the meeting up to then is written" in text, text
    turns = json.loads((out / "meeting.json").read_text())["turns"]
    words = " ".join(t["text"] for t in turns).lower()
    assert "crocodile" in words and "thank you" in words, turns   # the whole recording was heard


def test_mic_cli_ends_the_meeting_when_the_audio_server_hangs(virtual_mic, tmp_path_factory):
    """The audio server freezes mid-utterance instead of dying (SIGSTOP): the watchdog ends the
    capture, and closing the stream, which PortAudio cannot do while the server hangs, no longer
    holds the run. The open utterance is committed, the outputs are written, exit 1 (before, the
    run hung for good, deaf to Ctrl-C and SIGTERM, and lost the open utterance)."""
    d = tmp_path_factory.mktemp("vmic-frozen")   # a private audio server to freeze
    env = private_audio_server(d)
    server = int((d / "run" / "pid").read_text().split()[0])
    out = tmp_path_factory.mktemp("frozen") / "meeting"
    run = CliRun(["mic", "--device", "pulse", "--out", out, "--quiet"], env=env, marks=["audio flowing"])
    player = None
    try:
        assert run.seen("audio flowing").wait(90), run.text
        player = subprocess.Popen(["paplay", "--device=meetsink", str(FALCON)], env=env)
        time.sleep(10.0)   # inside the second speaker's turn (9.4-12.6 s of test.wav)
        os.kill(server, signal.SIGSTOP)
        rc = run.proc.wait(90)   # no signal: the watchdog ends the meeting
    finally:
        os.kill(server, signal.SIGCONT)
        if player is not None:
            player.kill()
        run.finish()
        subprocess.run([str(TOOLS / "virtual-mic.sh"), "stop", str(d)], capture_output=True, timeout=30)
    text = run.text
    print(text)
    assert rc == 1, text
    assert "stopped delivering audio" in text and "did not close" in text, text
    turns = json.loads((out / "meeting.json").read_text())["turns"]
    assert len(turns) >= 2 and turns[-1]["end"] > 8.0, turns   # the turn open at the freeze is kept


class _SilentStream:
    """Stands in for ``sounddevice.InputStream``: opens and reports itself active, but never calls
    back (a device that accepts the stream and delivers nothing)."""

    def __init__(self, **kw) -> None:  # noqa: ANN003
        self.active = False

    def start(self) -> None:
        self.active = True

    def stop(self) -> None:
        self.active = False

    abort = stop

    def close(self) -> None:
        pass


def test_a_device_that_never_delivers_is_reported_lost(virtual_mic, monkeypatch):
    """No first block at all: the watchdog ends the capture after first_block_seconds (before, only
    a device that had delivered and then stopped was noticed)."""
    import sounddevice

    from voicekit.capture.mic import MicSource

    monkeypatch.setattr(sounddevice, "InputStream", _SilentStream)
    source = MicSource("pulse", first_block_seconds=1.0)
    assert list(source) == []
    assert source.lost is not None and "no audio at all in the 1 s after the stream started" in source.lost


def test_mic_cli_a_device_lost_before_the_first_turn_leaves_the_old_meeting(virtual_mic, tmp_path, monkeypatch,
                                                                           capsys):
    """A review: `mic --overwrite` whose device stopped delivering before the first turn deleted
    the meeting it was to replace and wrote an empty one (livekit kept it), then advised
    "--append", which argparse refuses beside --overwrite. The device's name, printed through
    rich, is no markup ("desk [/b] mic" was an internal error once the stream had opened)."""
    import dataclasses

    import sounddevice

    import voicekit.capture.mic as mic
    from voicekit.cli import main
    from voicekit.store import MeetingStore

    out = tmp_path / "m"
    assert main(["replay", str(FALCON), "--out", str(out), "--quiet"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".sqlite"}
    monkeypatch.setattr(sounddevice, "InputStream", _SilentStream)
    listed = mic.list_input_devices
    monkeypatch.setattr(mic, "list_input_devices", lambda: [
        dataclasses.replace(d, name=f"{d.name} [/b] mic") if d.name == "pulse" else d for d in listed()])
    capsys.readouterr()
    assert main(["mic", "--device", "pulse [/b] mic", "--out", str(out), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "listening on 'pulse [/b] mic'" in err and "internal error" not in err, err
    assert "no audio at all" in err and "no turn was committed: the meeting --overwrite was to replace is kept" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".sqlite"} == before
    assert len(MeetingStore(out / "meeting.sqlite").turns()) == 3
    assert not (out / ".voicekit-replaced").exists()


def test_a_mic_source_captures_once(virtual_mic, monkeypatch):
    """A review: iterating a MicSource a second time opened a new stream and waited forever on
    its closed queue."""
    import sounddevice

    from voicekit.capture import CaptureError
    from voicekit.capture.mic import MicSource

    monkeypatch.setattr(sounddevice, "InputStream", _SilentStream)
    source = MicSource("pulse", first_block_seconds=0.5)
    assert list(source) == []
    with pytest.raises(CaptureError, match="captured once and was stopped: make a new MicSource"):
        list(source)


def test_a_hung_audio_server_at_start_is_an_error_not_a_long_wait(monkeypatch):
    """A review: with PulseAudio frozen, PortAudio's device listing (sounddevice's import) held
    `voicekit mic` and `voicekit devices` for two minutes, deaf to Ctrl-C, then blamed a missing
    server. Here the listing is a call that never returns."""
    import threading

    import voicekit.capture.mic as mic
    from voicekit.capture import CaptureError

    monkeypatch.setattr(mic, "AUDIO_SERVER_TIMEOUT_S", 0.5)
    hang = threading.Event()
    with pytest.raises(CaptureError, match="the audio server does not answer .*pulseaudio -k"):
        mic._within(hang.wait, "listing the audio devices")
    hang.set()
    assert mic._within(lambda: 42, "x") == 42
    with pytest.raises(ZeroDivisionError):
        mic._within(lambda: 1 / 0, "x")


def test_mic_cli_a_device_that_refuses_the_stream_leaves_the_old_meeting(virtual_mic, tmp_path, monkeypatch,
                                                                          capsys):
    """The stream cannot be opened (PortAudio refuses): one error line, exit 2, and nothing in
    --out changed: no empty store, and the meeting --overwrite would replace is still there
    (the store was made, and the old meeting deleted, before the stream was opened)."""
    import sounddevice

    from voicekit.cli import main

    out = tmp_path / "m"
    assert main(["replay", str(FALCON), "--out", str(out), "--quiet"]) == 0
    before = sorted(p.name for p in out.iterdir())

    def refuse(**kw):  # noqa: ANN003
        raise sounddevice.PortAudioError("Invalid sample rate", -9997)

    monkeypatch.setattr(sounddevice, "InputStream", refuse)
    capsys.readouterr()
    assert main(["mic", "--device", "pulse", "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "cannot open the input device 'pulse'" in err and "Invalid sample rate" in err, err
    assert sorted(p.name for p in out.iterdir()) == before
    assert main(["mic", "--device", "pulse", "--out", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


def test_mic_cli_a_meeting_that_fails_before_its_first_turn_puts_back_the_old_one(virtual_mic, tmp_path,
                                                                                   monkeypatch, capsys):
    """A review: `replay --overwrite` puts the old meeting back when the new one fails before its
    first turn, but `mic --overwrite` deleted it as soon as the stream opened, so a transcriber
    that failed on the first utterance lost it. The stream is closed too: a pipeline that failed
    before reading it left it open, and once the audio server went away its PortAudio thread spun
    for the rest of the process, printing millions of ALSA errors (the CI log of stop 28)."""
    import sounddevice

    from voicekit.cli import main
    from voicekit.pipeline import Pipeline

    opened = []
    real_stream = sounddevice.InputStream

    def recorded(**kw):  # noqa: ANN003
        opened.append(real_stream(**kw))
        return opened[-1]

    monkeypatch.setattr(sounddevice, "InputStream", recorded)

    out = tmp_path / "m"
    assert main(["replay", str(FALCON), "--out", str(out), "--quiet"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".sqlite"}

    def broken(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        raise IndexError("tuple index out of range")

    monkeypatch.setattr(Pipeline, "run", broken)
    capsys.readouterr()
    assert main(["mic", "--device", "pulse", "--out", str(out), "--overwrite", "--seconds", "2"]) != 0
    assert "IndexError: tuple index out of range" in capsys.readouterr().err
    assert len(opened) == 1 and opened[0].closed, opened
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.suffix != ".sqlite"} == before
    from voicekit.store import MeetingStore
    assert len(MeetingStore(out / "meeting.sqlite").turns()) == 3
    assert not (out / ".voicekit-replaced").exists()


def test_mic_cli_a_full_disk_keeps_the_committed_turns_and_names_the_export(virtual_mic, tmp_path, monkeypatch,
                                                                             capsys):
    """An ops trial: a disk that filled up mid-meeting ended `voicekit mic` with the store's error
    alone (no word of the turns kept or of the way back, as replay gives), and `export` then said
    the meeting was killed."""
    from voicekit.cli import main
    from voicekit.pipeline import Pipeline
    from voicekit.store import StoreError
    from voicekit.turns import SpeakerTurn, Word

    def fills_the_disk(self, source, **kwargs):  # noqa: ANN001, ANN003
        words = (Word(0.5, 0.9, "Hello", 0.9, "Speaker A"), Word(1.0, 1.4, "there.", 0.9, "Speaker A"))
        self.store.commit(SpeakerTurn("Speaker A", "Hello there.", 0.5, 1.4, words, channel="mic",
                                      metadata={"sender_name": "Speaker A"}))
        raise StoreError(f"cannot write to the meeting store {self.store.path} (database or disk is full); "
                         "free disk space")

    monkeypatch.setattr(Pipeline, "run", fills_the_disk)
    out = tmp_path / "m"
    assert main(["mic", "--device", "pulse", "--out", str(out), "--seconds", "2"]) == 2
    err = capsys.readouterr().err
    print(err)
    assert ("(database or disk is full); free disk space; the 1 turn committed before is kept: free space, then "
            f"run `voicekit export {out}` to write the outputs") in err, err
    assert "Traceback" not in err
    monkeypatch.undo()
    assert main(["export", str(out)]) == 0
    said = capsys.readouterr().out
    assert "(killed, the machine went down, or its disk filled up)" in said and "the 1 turn committed" in said
    assert (out / "meeting.txt").read_text(encoding="utf-8").count("Hello there.") == 1
