"""``voicekit replay … --session``: the options and the broadcaster they start (no models, but for one
replay of a real recording that is interrupted while it waits for its session)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from _pipeline_support import import_or_skip
from _realtime_meeting import SCRIPT, open_store, turn

from voicekit.cli import CliError, build_parser
from voicekit.cli.session import _make_session, _start_session
from voicekit.outputs import clock


def test_session_options_parse():
    args = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-model", "gpt-realtime",
                                      "--session-base-url", "ws://127.0.0.1:1/v1", "--session-log", "x.jsonl"])
    assert (args.session, args.session_model, args.session_base_url, args.session_log) == (
        "openai", "gpt-realtime", "ws://127.0.0.1:1/v1", "x.jsonl")
    assert build_parser().parse_args(["replay", "m.wav"]).session is None


def test_local_session_from_cli_writes_out_session_jsonl(tmp_path, capsys):
    store = open_store(tmp_path)
    args = build_parser().parse_args(["replay", "m.wav", "--session", "local"])
    b = _start_session(args, _make_session(args, tmp_path), store.path)
    for i, (s, n, x) in enumerate(SCRIPT[:2]):
        b.on_turn(store.commit(turn(s, n, x, i)))
    assert b.close(timeout=5)
    lines = (tmp_path / "session.jsonl").read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines] == ["session.update"] + ["conversation.item.create"] * 2
    assert capsys.readouterr().out.splitlines() == lines


def test_missing_api_key_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = build_parser().parse_args(["replay", "m.wav", "--session", "openai"])
    with pytest.raises(CliError, match="OPENAI_API_KEY"):
        _make_session(args, tmp_path)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    args = build_parser().parse_args(["replay", "m.wav", "--session", "gemini"])
    with pytest.raises(CliError, match="GEMINI_API_KEY"):
        _make_session(args, tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_make_session_refuses_a_base_url_for_the_local_session(tmp_path):
    """A trial of the Python API: make_session("local", base_url=…) was accepted without a word
    (the command line refuses the pair): a local session reaches no server."""
    from voicekit.realtime import make_session

    with pytest.raises(ValueError, match="base_url 'http://x' is a provider's address: a local session reaches no "
                                         "server"):
        make_session("local", base_url="http://x", log_path=str(tmp_path / "s.jsonl"))
    assert make_session("local", log_path=str(tmp_path / "s.jsonl")).name == "local"


def test_session_log_that_is_a_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    args = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-log", str(tmp_path)])
    with pytest.raises(CliError, match="is a folder: give a file name"):
        _make_session(args, tmp_path)
    # a path under a file (used to die later: a FileExistsError traceback after the models loaded)
    (tmp_path / "afile").write_text("x")
    for kind in ("local", "openai"):
        args = build_parser().parse_args(["replay", "m.wav", "--session", kind, "--session-log",
                                          str(tmp_path / "afile" / "session.jsonl")])
        with pytest.raises(CliError, match="afile is a file, not a folder"):
            _make_session(args, tmp_path)


def test_ctrl_c_while_the_replay_waits_for_its_session_still_writes_the_outputs(tmp_path, monkeypatch, capsys):
    # the broadcaster's close waits up to --session-timeout for the session to take what is queued;
    # a user who presses Ctrl-C then still gets every output file of the turns committed
    from _pipeline_support import EVAL

    from voicekit.cli import main
    from voicekit.realtime.broadcaster import Broadcaster

    real_close = Broadcaster.close

    def impatient(self, timeout=10.0):
        real_close(self, timeout=0.5)
        raise KeyboardInterrupt  # the Ctrl-C lands in the wait

    monkeypatch.setattr(Broadcaster, "close", impatient)
    out = tmp_path / "out"
    rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
               "--session", "local"])
    err = capsys.readouterr().err
    print(err)
    assert rc == 130 and "stopped waiting for the live session" in err
    doc = json.loads((out / "test.json").read_text())
    assert len(doc["turns"]) == 3 and "crocodile" in doc["turns"][1]["text"]
    assert all((out / f"test.{ext}").is_file() for ext in ("rttm", "srt", "vtt", "txt"))
    assert f"the local session's events (what a live model would have received): {out / 'session.jsonl'}" in err


def test_a_session_that_never_connects_fails_the_replay_but_not_the_transcript(tmp_path, monkeypatch, capsys):
    """--session openai with nothing at its URL: every output is written, and the run says that the
    session was not sent every turn and exits 1 (it exited 0 under a warning that promised a resend
    no command makes)."""
    import_or_skip("openai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    import socket

    from _pipeline_support import EVAL

    from voicekit.cli import main

    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
               "--session", "openai", "--session-base-url", f"ws://127.0.0.1:{port}/v1", "--session-timeout", "2",
               "--session-log", str(tmp_path / "events.jsonl")])
    err = capsys.readouterr().err
    print(err)
    assert rc == 1, err
    # the session log says what happened to a provider the meeting never reached (it stayed empty)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "connect_failed" and kinds[-1] == "unsent" and set(kinds) == {"connect_failed", "unsent"}
    assert events[-1]["text"].startswith("closed with ") and "not sent" in events[-1]["text"]
    assert "the live session (openai) was not sent every turn within --session-timeout 2 s" in err
    assert "a replay is not resumed: the same replay with --overwrite" in err and "voicekit mic" not in err
    assert len(json.loads((out / "test.json").read_text())["turns"]) == 3


def test_a_refused_api_key_fails_the_replay_with_the_key_to_check(tmp_path, monkeypatch, capsys):
    """A provider that answers the handshake with HTTP 401 was retried until the end of the
    meeting, and the closing line promised that the same replay would send the meeting. Now one
    error line says it was refused, no retry follows, and the closing line names the key."""
    import_or_skip("openai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    from _pipeline_support import EVAL
    from _realtime_servers import RefusingServer

    from voicekit.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0123456789")
    out = tmp_path / "out"
    with RefusingServer(401) as server:
        rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
                   "--session", "openai", "--session-base-url", f"ws://127.0.0.1:{server.port}/v1",
                   "--session-log", str(tmp_path / "events.jsonl")])
        tries = len(server.paths)
    err = capsys.readouterr().err
    print(err)
    assert rc == 1 and tries == 1, err
    assert "retrying in" not in err and "sk-wrong" not in err
    assert "waiting up to" not in err   # nothing will be taken: no wait for it
    assert ("voicekit: error: the live session (openai) refused the connection (cannot connect to OpenAI Realtime: "
            "server rejected WebSocket connection: HTTP 401): check OPENAI_API_KEY and --session-model") in err
    assert len(json.loads((out / "test.json").read_text())["turns"]) == 3
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["kind"] for e in events] == ["refused", "unsent"] and "HTTP 401" in events[0]["text"]


def test_a_turn_the_provider_rejects_fails_the_replay_and_is_named(tmp_path, monkeypatch, capsys):
    """A realtime integrator's trial: the provider refused turn 2 (an `error` event for its item),
    one ERROR line said so mid-replay, and the replay ended as if all went well (exit 0): the
    model never got the turn. The closing line names the turn and the exit code is 1."""
    import_or_skip("openai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    from _pipeline_support import EVAL
    from _realtime_servers import FakeOpenAIRealtime

    from voicekit.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    with FakeOpenAIRealtime() as server:
        server.reject_text = "crocodile"
        rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
                   "--session", "openai", "--session-base-url", f"ws://127.0.0.1:{server.port}/v1"])
    err = capsys.readouterr().err
    print(err)
    turns = json.loads((out / "test.json").read_text())["turns"]
    [rejected] = [t for t in turns if "crocodile" in t["text"]]
    assert rc == 1, err
    assert re.search(r"voicekit: error: the live session \(openai\) rejected 1 turn \(the turn at "
                     + re.escape(clock(rejected["start"], digits=1)) + r"; the error lines above give the "
                     r"provider's reason\): the model never got it", err), err
    assert "was not sent every turn within" not in err


def test_the_session_log_names_each_provider_event_and_when_it_came(tmp_path, monkeypatch):
    """A live-features trial: every acknowledgement was logged as {"kind": "other", "text": ""},
    with no word of which event it was nor when (the file is appended to run after run)."""
    import_or_skip("openai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    from _realtime_servers import FakeOpenAIRealtime

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    store = open_store(tmp_path)
    log = tmp_path / "events.jsonl"
    t0 = time.time()
    with FakeOpenAIRealtime() as server:
        server.reject_text = "budget"    # the second turn is refused
        args = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-log", str(log),
                                          "--session-base-url", f"ws://127.0.0.1:{server.port}/v1"])
        b = _start_session(args, _make_session(args, tmp_path), store.path)
        committed = []
        for i, (spk, name, text) in enumerate(SCRIPT[:3]):
            committed.append(store.commit(turn(spk, name, text, i)))
            b.on_turn(committed[-1])
        assert b.close(timeout=10)
        # the default model is named in the session id: leaving --session-model out and naming the
        # default are one session (a realtime trial: "openai:default" and "openai:gpt-realtime",
        # so an --append would send the whole meeting again)
        named = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-model", "gpt-realtime",
                                           "--session-base-url", f"ws://127.0.0.1:{server.port}/v1"])
        b2 = _start_session(named, _make_session(named, tmp_path), store.path)
        assert b2.close(timeout=10)
        assert b.session_id == b2.session_id == "openai:gpt-realtime" and b2.stats["delivered"] == 0
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    print(events)
    types = [e["type"] for e in events]
    assert types[:2] == ["session.created", "session.updated"]
    assert types.count("conversation.item.added") == 2 and set(e["kind"] for e in events) == {"other", "error"}
    assert all(t0 - 1 <= e["at"] <= time.time() + 1 for e in events)
    # a realtime trial: an acknowledgement did not say which turn it acknowledged, and the error
    # line lost the provider's code and its own event id
    assert [e["item_id"] for e in events if e["type"] == "conversation.item.added"] == \
        [f"vk-t{committed[0].turn_id}", f"vk-t{committed[2].turn_id}"]
    [error] = [e for e in events if e["kind"] == "error"]
    assert error["code"] == "invalid_value" and error["event_id"].startswith("vk-oa-")
    assert error["provider_event_id"] == server.errors_sent[0]["event_id"] != error["event_id"]


def test_gemini_with_a_plain_http_base_url_is_refused_before_anything_opens(tmp_path, monkeypatch):
    """google-genai makes any base URL wss://: an http:// server got a TLS handshake, failed with
    [SSL: WRONG_VERSION_NUMBER] and was retried all meeting."""
    import_or_skip("google.genai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    for base in ("http://127.0.0.1:9112", "ws://127.0.0.1:9112"):
        args = build_parser().parse_args(["replay", "m.wav", "--session", "gemini", "--session-base-url", base])
        with pytest.raises(CliError, match="Gemini Live connects over TLS only .* give https://HOST"):
            _make_session(args, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_waiting_for_a_provider_that_never_answers_leaves_a_checkpointed_store(tmp_path, monkeypatch,
                                                                                          capsys):
    """A provider that takes the TCP connection and never answers; Ctrl-C in the end-of-meeting
    wait. The session is given up, its thread closes its store connection, and SQLite folds the
    write-ahead log into meeting.sqlite (it was left in meeting.sqlite-wal: a user who copied the
    file the README names got an empty meeting)."""
    import_or_skip("openai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
    import socket
    import sqlite3

    from _pipeline_support import EVAL

    from voicekit.cli import main
    from voicekit.realtime.broadcaster import Broadcaster

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)   # the kernel completes the handshake; nobody ever reads
    real_close, calls = Broadcaster.close, []

    def ctrl_c_in_the_wait(self, timeout=10.0):
        calls.append(timeout)
        if len(calls) == 1:
            time.sleep(0.5)
            raise KeyboardInterrupt
        return real_close(self, timeout)

    monkeypatch.setattr(Broadcaster, "close", ctrl_c_in_the_wait)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "out"
    try:
        rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
                   "--session", "openai", "--session-base-url", f"ws://127.0.0.1:{silent.getsockname()[1]}/v1",
                   "--session-timeout", "60"])
    finally:
        silent.close()
    err = capsys.readouterr().err
    assert rc == 130 and "stopped waiting for the live session" in err, err
    assert calls == [60.0, 0]
    assert not (out / "meeting.sqlite-wal").exists()
    copy = tmp_path / "copy.sqlite"
    copy.write_bytes((out / "meeting.sqlite").read_bytes())   # the store file alone holds the meeting
    assert sqlite3.connect(copy).execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 3


def test_session_instructions_from_a_file_reach_the_session_update(tmp_path):
    """--session-instructions (text or a file) is the session's system prompt: the first event."""
    from _pipeline_support import EVAL

    from voicekit.cli import main

    prompt = tmp_path / "iris.txt"   # an editor's final newline is no part of the instructions
    prompt.write_text("You are Iris, the meeting's note taker.\nAnswer in one sentence.\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(out), "--quiet",
                 "--session", "local", "--session-instructions", str(prompt)]) == 0
    first = json.loads((out / "session.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "session.update"
    assert first["session"]["instructions"] == "You are Iris, the meeting's note taker.\nAnswer in one sentence."
    assert main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(tmp_path / "o2"),
                 "--session", "local", "--session-instructions", "  "]) == 2


@pytest.mark.parametrize("value", ["iris.tx", "prompts/iris", "Be brief.", "Concise",
                                   "You are Iris, the note taker. " * 10])   # one line, no file name (ENAMETOOLONG)
def test_session_instructions_that_name_no_file_are_refused_when_they_read_as_a_path(tmp_path, capsys, value):
    """A trial: `--session-instructions instr.tx` (a typo of instr.txt) was sent to the model as
    the instructions "instr.tx". A value with no blank and a '/' or a file suffix must name a
    file; other text is the instructions themselves."""
    from voicekit.cli.session import _instructions

    if value in ("iris.tx", "prompts/iris"):
        with pytest.raises(CliError, match=f"^--session-instructions {value}: no such file; name an existing "
                                           r"file, or give the instructions as text \(in quotes\)$"):
            _instructions(value)
    else:
        assert _instructions(value) == value.strip()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CliError, match=f"^--session-instructions file {empty} is empty"):
        _instructions(str(empty))
    # a folder (a realtime trial: "no such file")
    with pytest.raises(CliError, match=f"^--session-instructions {tmp_path} is a folder: name the file in it"):
        _instructions(str(tmp_path))


def _unwritable_logs(tmp_path):
    """Session logs that cannot be opened for append: a file in /proc (the user's trial), and a
    name too long for the file system under two folders that do not exist yet."""
    paths = [tmp_path / "new" / "sub" / ("x" * 300 + ".jsonl")]
    if Path("/proc/self").is_dir():
        paths.insert(0, Path("/proc/x.jsonl"))
    return paths


def test_an_unwritable_session_log_is_one_line_before_the_models_load(tmp_path, monkeypatch, capsys):
    """A user trial: `replay … --session local --session-log /proc/x.jsonl` loaded the models, printed
    a traceback mid-meeting and ended with a misleading "the live session (local) was not sent every
    turn", exit 1. Now it is one `voicekit: error:` line naming the path, exit 2, before the models
    load, and the folders the check made are gone."""
    from _pipeline_support import EVAL

    from voicekit.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for kind in ("local", "openai"):
        for path in _unwritable_logs(tmp_path):
            rc = main(["replay", str(EVAL / "picovoice_falcon" / "test.wav"), "--out", str(tmp_path / "o"),
                       "--session", kind, "--session-log", str(path)])
            err = capsys.readouterr().err
            lines = err.strip().splitlines()
            assert rc == 2 and len(lines) == 1, err
            assert lines[0].startswith(f"voicekit: error: --session-log {path} cannot be written ("), err
            assert lines[0].endswith("); give a file in a folder you can write to"), err
            assert "loading models" not in err
    assert not (tmp_path / "new").exists()     # the check made new/sub/ for its probe, and removed it


def test_an_unwritable_session_log_stops_mic_before_the_device_opens(tmp_path, monkeypatch, capsys):
    """`mic --session local --session-log /proc/x.jsonl` printed a traceback and exited 0."""
    import voicekit.capture.mic
    from voicekit.cli import main

    opened = []
    monkeypatch.setattr(voicekit.capture.mic, "MicSource", lambda *a, **kw: opened.append(a))
    path = _unwritable_logs(tmp_path)[0]
    rc = main(["mic", "--out", str(tmp_path / "o"), "--session", "local", "--session-log", str(path),
               "--seconds", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().splitlines() == [
        f"voicekit: error: --session-log {path} cannot be written "
        f"({'No such file or directory' if str(path).startswith('/proc') else 'File name too long'}); "
        "give a file in a folder you can write to"], err
    assert opened == []


def test_a_writable_session_log_is_checked_without_a_trace(tmp_path, monkeypatch):
    """The check opens the log for append and leaves nothing: a new file and its new folders are
    removed (the session makes them when it starts), an existing log keeps its lines."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    new = tmp_path / "logs" / "day1" / "events.jsonl"
    args = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-log", str(new)])
    assert _make_session(args, tmp_path) is not None
    assert list(tmp_path.iterdir()) == []
    old = tmp_path / "events.jsonl"
    old.write_text('{"kind": "dropped"}\n')
    args = build_parser().parse_args(["replay", "m.wav", "--session", "local", "--session-log", str(old)])
    assert _make_session(args, tmp_path).path == old
    assert old.read_text() == '{"kind": "dropped"}\n'
