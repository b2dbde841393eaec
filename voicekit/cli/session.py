"""The realtime session of ``--session`` (docs/realtime.md): made from the options before anything
else, started with the meeting, closed at its end; and the ``on_turn`` sink of a live capture that
feeds it."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.markup import escape

from voicekit.cli.common import CliError, _plural


SESSION_TIMEOUT_S = 10.0
"""How long a meeting's end waits for the live session to take what is queued (``--session-timeout``)."""


def _make_session(args: argparse.Namespace, out: Path, echo: bool = True):
    """The realtime session for ``--session`` (None without it); see docs/realtime.md.

    Made before the meeting store and the models: it only checks the options (the provider's
    API key, the log path), it connects later (:func:`_start_session`). ``echo``: the local
    session also prints its events (not with ``--quiet``; the live commands never, their live
    lines are on the terminal).

    Raises:
        CliError: no API key for the provider, a bad option, a ``--session-log`` that is a folder
            or cannot be opened for append (:func:`_check_session_log`).
    """
    if not args.session:
        given = [f"--{k.replace('_', '-')}" for k in ("session_model", "session_base_url", "session_log",
                                                       "session_instructions", "session_timeout")
                 if getattr(args, k, None) is not None]
        if given:
            raise CliError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to a live model "
                           "session: add --session local|openai|gemini, or leave it out")
        return None
    from voicekit.realtime import make_session
    from voicekit.realtime.local_session import stdout_echo

    base = args.session_base_url
    if base is not None and args.session == "local":
        raise CliError("--session-base-url is a provider's address: it applies to --session openai or gemini")
    if base is not None and not base.startswith(("ws://", "wss://", "http://", "https://")):
        raise CliError(f"--session-base-url {base!r} has no scheme: give ws(s)://host/v1 or https://host/v1")

    if args.session_timeout is None:
        args.session_timeout = SESSION_TIMEOUT_S
    if args.session_timeout < 0:
        raise CliError(f"--session-timeout must be 0 or more seconds, got {args.session_timeout}")
    log_path = Path(args.session_log) if args.session_log else (
        out / "session.jsonl" if args.session == "local" else None)
    if log_path is not None:
        _check_session_log(log_path)
    instructions = _instructions(args.session_instructions)
    try:
        return make_session(args.session, model=args.session_model, base_url=args.session_base_url,
                            log_path=str(log_path) if args.session == "local" and log_path else None,
                            echo=stdout_echo if echo and not getattr(args, "quiet", False) else None,
                            instructions=instructions)
    except ValueError as exc:
        raise CliError(f"--session {args.session}: {exc}") from exc


def _instructions(value: str | None) -> str | None:
    """The text of ``--session-instructions``: ``value`` itself, or the UTF-8 file it names, with
    the blank lines and spaces around it removed (an editor's final newline is no instruction).

    Raises:
        CliError: an empty value or file; a file that cannot be read as UTF-8; a value that
            reads as a path (no blank, and a ``/`` or a file suffix such as ``.txt``) to no
            file: a mistyped file name would otherwise be sent as the instructions.
    """
    import re

    if value is None:
        return None
    try:
        is_file = "\n" not in value and Path(value).is_file()
    except OSError:   # ENAMETOOLONG: a long one-line prompt, no file name
        is_file = False
    if not re.search(r"\s", value) and _is_dir(value):
        raise CliError(f"--session-instructions {value} is a folder: name the file in it that holds the "
                       "instructions, or give them as text (in quotes)")
    if is_file:
        try:
            text = Path(value).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--session-instructions {value}: cannot read it as UTF-8 text ({exc})") from exc
    elif not re.search(r"\s", value) and ("/" in value or os.sep in value or re.search(r"\.[A-Za-z]\w{0,4}$", value)):
        raise CliError(f"--session-instructions {value}: no such file; name an existing file, or give the "
                       "instructions as text (in quotes)")
    else:
        text = value
    if not text.strip():
        raise CliError(f"--session-instructions {'file ' + value + ' ' if text is not value else ''}is empty: "
                       "give the assistant's instructions, or leave it out")
    return text.strip()


def _is_dir(value: str) -> bool:
    """Whether ``value`` names a folder (False for a name the file system refuses)."""
    try:
        return Path(value).is_dir()
    except OSError:
        return False


def _check_session_log(path: Path) -> None:
    """Check that the session log ``path`` can be written: it is not a folder, no folder above it
    is a file, and it opens for append, as the session will open it (in a folder created for it
    when missing). A log that cannot be written is so an error before the models load or a device
    opens, not a failure mid-meeting. The check leaves nothing behind: a file it created is
    removed, and so are the folders it created (the session makes them again when it starts).

    Raises:
        CliError: ``path`` is a folder, or under a file, or cannot be created or opened for append
            (permissions, a read-only or virtual file system such as ``/proc``, a name too long,
            …); the line names the path, the reason and the fix.
    """
    def unwritable(exc: OSError) -> CliError:
        return CliError(f"--session-log {path} cannot be written ({exc.strerror or exc}); give a file in a "
                        "folder you can write to")

    try:
        if path.is_dir():
            raise CliError(f"--session-log {path} is a folder: give a file name, e.g. {path / 'session.jsonl'}")
        blocked = next((d for d in path.parents if d.exists() and not d.is_dir()), None)
        if blocked is not None:
            raise CliError(f"--session-log {path}: {blocked} is a file, not a folder; give a path in a folder")
        if path.exists() and not os.access(path, os.W_OK):
            raise CliError(f"--session-log {path} cannot be written (permissions); give another path")
        existed = path.exists()
    except OSError as exc:   # a name too long to look at, a folder that cannot be searched
        raise unwritable(exc) from exc
    missing = []   # the folders above the file that do not exist yet, innermost first
    for folder in path.parents:
        if folder.exists():
            break
        missing.append(folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise unwritable(exc) from exc
    finally:
        if not existed:
            try:
                path.unlink()
            except OSError:
                pass   # never made: the open failed
        for folder in missing:
            try:
                folder.rmdir()
            except OSError:
                break   # not empty: someone else's file appeared meanwhile, and it stays


def _start_session(args: argparse.Namespace, session, store_path: Path):  # noqa: ANN001 - RealtimeSession
    """The started broadcaster that feeds ``session`` (from :func:`_make_session`) every turn
    committed to ``store_path``; None without ``--session``."""
    if session is None:
        return None
    import json
    import time

    from voicekit.realtime import Broadcaster

    on_event = None
    if args.session_log and args.session != "local":
        log_path = Path(args.session_log)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        fh = log_path.open("a", encoding="utf-8")

        def write_event(ev) -> None:  # noqa: ANN001 - voicekit.realtime.SessionEvent
            # the provider's own event type (OpenAI: "type"; Gemini: the message's field, e.g.
            # "server_content"), and when: the file is appended to by every run of the meeting
            raw = ev.raw if isinstance(ev.raw, dict) else {}
            kind = raw.get("type") if isinstance(raw.get("type"), str) else next(iter(raw), None)
            line = {"kind": ev.kind, "type": kind, "text": ev.text, "event_id": ev.event_id}
            # which item an event is about (an acknowledgement names the turn's vk-t<id>), and an
            # error's own id and code (its event_id above is the client event it names)
            item = raw.get("item")
            item_id = item.get("id") if isinstance(item, dict) else raw.get("item_id")
            if isinstance(item_id, str):
                line["item_id"] = item_id
            error = raw.get("error")
            if isinstance(error, dict):
                if isinstance(error.get("code"), str):
                    line["code"] = error["code"]
                if isinstance(raw.get("event_id"), str) and raw["event_id"] != ev.event_id:
                    line["provider_event_id"] = raw["event_id"]
            fh.write(json.dumps({**line, "at": round(time.time(), 3)}, ensure_ascii=False) + "\n")
            fh.flush()
        on_event = write_event
    # the model the session runs, the provider's default included: leaving --session-model out and
    # naming that default are one session (an --append would otherwise send the meeting again)
    session_id = f"{args.session}:{getattr(session, 'model', None) or args.session_model or 'default'}"
    return Broadcaster(session, store_path, session_id=session_id, on_event=on_event,
                       reserved_names=_member_names(args)).start()


def _member_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The names and aliases of the ``--members`` file's AI members (none without it, or when it
    cannot be loaded: the turn-taking decisions report that)."""
    from voicekit.turntaking import MembersError, load_members

    if not getattr(args, "members", None):
        return ()
    try:
        room = load_members(args.members)
    except (OSError, MembersError):
        return ()
    return tuple(name for m in room.members for name in m.call_names)


def _close_session(broadcaster, args: argparse.Namespace, err) -> tuple[bool, bool]:  # noqa: ANN001
    """At the end of a meeting, wait up to ``--session-timeout`` for the live session to take
    what is queued. Returns ``(missed, stopped)``: it was not sent every turn, or the provider
    rejected one (``Broadcaster.rejected_turns``); a Ctrl-C stopped the wait (the outputs are
    written all the same)."""
    if broadcaster is None:
        return False, False
    if broadcaster.backlog and args.session_timeout > 0 and args.session != "local" and not broadcaster.refused:
        # (local: a file, no wait; refused: nothing will be taken)
        err.print(f"[dim]waiting up to {args.session_timeout:g} s for the live session to take "
                  f"{_plural(broadcaster.backlog, 'item')} still queued (Ctrl-C gives up)…[/dim]")
    try:
        return not broadcaster.close(timeout=args.session_timeout) or bool(broadcaster.rejected_turns), False
    except KeyboardInterrupt:
        err.print("[yellow]stopped waiting for the live session (the turns it was not sent are in the store); "
                  "writing outputs[/yellow]")
        try:   # give the session up now: its thread closes its store connection, so SQLite can checkpoint
            broadcaster.close(timeout=0)
        except KeyboardInterrupt:
            pass
        return False, True


def _session_missed_line(args: argparse.Namespace, broadcasters=()) -> str:  # noqa: ANN001
    """The closing error of a meeting whose live session was not sent every turn (exit code 1):
    for a provider that refused the connection (``broadcasters``' ``error``), which key to check."""
    from voicekit.realtime import SessionRefused

    rest = (f"`voicekit {args.command} --append` with the same session options sends the rest"
            if args.command in ("mic", "livekit") else
            "a replay is not resumed: the same replay with --overwrite and the same session options sends "
            "the whole meeting to a new conversation")
    refused = next((b.error for b in broadcasters if b is not None and isinstance(b.error, SessionRefused)), None)
    if refused is not None:
        key = {"openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY (or GOOGLE_API_KEY)"}.get(args.session, "the key")
        return (f"[red]voicekit: error: the live session ({args.session}) refused the connection ({escape(str(refused))}): "
                f"check {key} and --session-model; the transcript is complete in the outputs and the store; once "
                f"the key works, {rest} (exit code 1)[/red]")
    rejected = sorted((r for b in broadcasters if b is not None for r in b.rejected_turns), key=lambda r: r[1])
    if rejected:
        from voicekit.outputs import clock

        which = ", ".join(f"the turn at {clock(start, digits=1)}" for _, start in rejected[:6]) + \
            (" …" if len(rejected) > 6 else "")
        return (f"[red]voicekit: error: the live session ({args.session}) rejected {_plural(len(rejected), 'turn')} "
                f"({which}; the error lines above give the provider's reason): the model never got "
                f"{'it' if len(rejected) == 1 else 'them'}; the transcript is complete in the outputs and the store "
                "(exit code 1)[/red]")
    return (f"[red]voicekit: error: the live session ({args.session}) was not sent every turn within "
            f"--session-timeout {args.session_timeout:g} s (see the warnings above); the transcript is "
            f"complete in the outputs and the store; {rest} (exit code 1)[/red]")


def _session_log_line(session, err, broadcasters=()) -> None:  # noqa: ANN001
    """Where the local session wrote what a live model would have received; for a meeting that
    went on (``--append``), that this run's conversation began with the turns an earlier run had
    delivered, sent again for context (so the file holds them twice)."""
    path = getattr(session, "path", None)
    if path is not None and Path(path).is_file():
        resent = sum(b.stats["resent_after_restart"] for b in broadcasters if b is not None)
        err.print(f"the local session's events (what a live model would have received): {path}"
                  + (f" (this run's conversation, from its session.update on, began with the "
                     f"{_plural(resent, 'turn')} an earlier run delivered, sent again for context)" if resent else ""))


def _live_sink(printed):  # noqa: ANN001, ANN202
    """The ``on_turn`` of a live capture and the list it feeds: each committed turn is printed
    (``printed``, None with ``--quiet``), then handed to every broadcaster appended to the list
    (``--session``, started when the capture starts)."""
    live: list = []

    def on_turn(turn) -> None:  # noqa: ANN001
        if printed is not None:
            printed(turn)
        for broadcaster in live:
            broadcaster.on_turn(turn)
    return on_turn, live
