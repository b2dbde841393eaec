"""``voicekit replay … --session``: the options and the broadcaster they start (no models)."""

from __future__ import annotations

import json

import pytest

from _realtime_meeting import SCRIPT, open_store, turn

from voicekit.cli import CliError, _make_session, _start_session, build_parser


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


def test_session_log_that_is_a_folder_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    args = build_parser().parse_args(["replay", "m.wav", "--session", "openai", "--session-log", str(tmp_path)])
    with pytest.raises(CliError, match="is a folder: give a file name"):
        _make_session(args, tmp_path)
