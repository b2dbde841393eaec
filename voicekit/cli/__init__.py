"""The ``voicekit`` command line (console script ``voicekit.cli:main``; ``python -m voicekit.cli``).

Every subcommand lives in its own module, with the function that adds its parser:

    replay.py    voicekit replay
    export.py    voicekit export
    tools.py     voicekit eval, voicekit models
    voices.py    voicekit voices list|delete|enrol, and the voice library behind --voices
    capture.py   voicekit devices, mic, livekit (live capture, docs/capture.md)

and what they share:

    common.py    CliError, small helpers, machine_line and source_commit
    options.py   the argument groups several subcommands take, and args -> PipelineOptions, hooks
    meeting.py   the meeting store in --out: checks, stems, outputs, refinement, summaries
    session.py   the realtime session of --session (docs/realtime.md)
    decisions.py --members/--explain: the turn-taking ladder on every turn (speak_decisions)

This module builds the parser (:func:`build_parser`, subcommands in --help order) and runs the
command (:func:`main`): every expected error becomes one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from voicekit import __version__
from voicekit.cli.capture import _capture_parsers
from voicekit.cli.common import (CliError, HelpFormatter, _ReaderWatch, _release_meeting_dirs, _silence_stream,
                                 _StderrGuard, machine_line, source_commit)
from voicekit.cli.export import _export_parser
from voicekit.cli.decisions import speak_decisions
from voicekit.cli.replay import _replay_parser
from voicekit.cli.tools import _tool_parsers
from voicekit.cli.voices import _voices_parser

__all__ = ["CliError", "build_parser", "machine_line", "main", "source_commit", "speak_decisions"]

# the description of `voicekit --help`
_DESCRIPTION = """The voicekit command: one subcommand per task.

    voicekit replay meeting.wav --out out/      a recording through the pipeline, live lines
    voicekit export out/ [--refine]             rewrite the outputs from the meeting store
    voicekit eval [--files ID …]                DER / WER / RTF on ../shared/eval
    voicekit models [--verify]                  where each model comes from, checksums
    voicekit devices                            list audio input devices
    voicekit mic [--device NAME|INDEX] --out out/   the shared conference microphone, live
    voicekit livekit --url URL --token T --out out/ a LiveKit room bot, one lane per participant
    voicekit voices list|delete NAME|delete --all|enrol NAME AUDIO   known voices (opt-in)
"""


class _Parser(argparse.ArgumentParser):
    """argparse's parser with one-line usage errors, like voicekit's other errors (docs/robustness.md):
    ``voicekit: error: <argparse's message>; `voicekit replay --help` lists the options``, exit
    code 2, without the usage block. Subcommand parsers are made of this class too."""

    def error(self, message: str) -> NoReturn:
        for action in self._actions:   # a missing subcommand: name the ones there are
            if isinstance(action.choices, dict) and message == f"the following arguments are required: {action.dest}":
                first: dict[int, str] = {}   # each subcommand by its first name, not its aliases
                for name, sub in action.choices.items():
                    first.setdefault(id(sub), name)
                message = f"missing the {action.dest}, one of: {', '.join(first.values())}"
        self.exit(2, f"voicekit: error: {message}; `{self.prog} --help` lists the options\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="voicekit", description=_DESCRIPTION, formatter_class=HelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("--version", action="version", version=f"voicekit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    _replay_parser(sub)
    _export_parser(sub)
    _tool_parsers(sub)
    _voices_parser(sub)
    _capture_parsers(sub)
    _debug_everywhere(parser)
    return parser


def _debug_everywhere(parser: argparse.ArgumentParser) -> None:
    """Let ``--debug`` come after the command too (``voicekit replay x.wav --debug``), not only
    before it: every subcommand, nested ones included, takes it without overriding a ``--debug``
    given before the command (``default=SUPPRESS``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):   # (aliases map to the same parser)
                sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                                 help="show tracebacks and debug logs (also accepted before the command)")
                _debug_everywhere(sub)


class _LogFormatter(logging.Formatter):
    """Log lines without ``--debug``: voicekit's own read like its other lines (``warning: …``, as
    a new-user trial found ``WARNING voicekit.voiceprints: …`` among plain lines); another
    library's name it (``error (livekit): …``)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        level = record.levelname.lower()
        if record.name == "voicekit" or record.name.startswith("voicekit."):
            return f"{level}: {record.message}"
        return f"{level} ({record.name}): {record.message}"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``voicekit`` command; returns the exit code."""
    _escape_unencodable_stdout()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # (what the subcommand did not take reaches the top parser: name the subcommand's help)
        parser.exit(2, f"voicekit: error: unrecognized arguments: {' '.join(extra)}{_quote_hint(args, extra)}"
                       f"{_append_hint(args, extra)}{_recordings_hint(args, extra)}; "
                       f"`voicekit {args.command} --help` lists the options\n")
    if args.debug:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    else:
        handler = logging.StreamHandler()
        handler.setFormatter(_LogFormatter())
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
    if getattr(args, "out", "") is None and hasattr(args, "default_out"):
        args.out = args.default_out(args)   # a default that depends on the arguments (replay: out/NAME)
    out = Path(args.out).absolute() if isinstance(getattr(args, "out", None), str) else None
    made = [d for d in ([out, *out.parents] if out is not None else []) if not d.exists()]
    code = 1
    try:
        with _StderrGuard():   # a stderr whose reader left is silenced, never the end of the command
            code = _dispatch(args)
        return code
    finally:
        _release_meeting_dirs()
        if code != 0:  # a command that failed before writing anything leaves no empty --out
            for d in made:  # --out first, then the parents it created
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()


def _escape_unencodable_stdout() -> None:
    """Write what standard output's encoding cannot hold as a backslash escape (``\\u2192``), as
    Python's standard error already does. A stdout in ASCII or Latin-1 (``PYTHONIOENCODING=ascii``,
    a C locale) failed every live line with a traceback (each holds ``→``) and the meeting still
    exited 0 with an empty transcript on stdout (a multilingual trial)."""
    if hasattr(sys.stdout, "reconfigure") and (getattr(sys.stdout, "errors", None) or "strict") == "strict":
        try:
            sys.stdout.reconfigure(errors="backslashreplace")
        except (ValueError, OSError):   # a closed or detached stream: nothing to write to anyway
            pass


def _quote_hint(args: argparse.Namespace, extra: list[str]) -> str:
    """The fix for the commonest cause of extra arguments: a ``--speaker-names`` map given without
    quotes, which the shell splits at its spaces (``--speaker-names Speaker A=Diane`` leaves
    ``A=Diane`` over). Empty when that is not the cause."""
    names = getattr(args, "speaker_names", None)
    if not names or "=" in names:   # (the shell cut the map before its first '=')
        return ""
    rest = [e for e in extra if not e.startswith("-")]
    if not any("=" in e for e in rest):
        return ""
    return f" (quote a names map that holds spaces: --speaker-names \"{' '.join([names, *rest])}\")"


def _append_hint(args: argparse.Namespace, extra: list[str]) -> str:
    """Where ``--append`` belongs, when a command that does not take it was given it."""
    if "--append" not in extra:
        return ""
    return (" (--append goes on with a live meeting: voicekit mic|livekit --append; a replay always starts "
            "a meeting of its own: choose another --out, or --overwrite to replace the one there)")


def _recordings_hint(args: argparse.Namespace, extra: list[str]) -> str:
    """The fix for ``voicekit replay a.wav b.wav``: one recording per replay (a long-recordings
    trial read "unrecognized arguments: b.wav" as a bad option)."""
    if args.command != "replay" or not any(Path(e).suffix and not e.startswith("-") for e in extra):
        return ""
    return (" (a replay hears one recording: run voicekit replay once per file, each into its own --out; "
            "join the recordings first to replay them as one meeting)")


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; every expected error becomes one line on stderr and an exit code (2 for a
    mistake the message names the fix of, 1 for an internal error, 130 for Ctrl-C). ``--debug``
    prints the traceback before that line and keeps the exit code."""
    from voicekit.audio import AudioError
    from voicekit.capture import CaptureError
    from voicekit.devices import DeviceError
    from voicekit.hooks import HookError
    from voicekit.models import ModelError
    from voicekit.outputs import OutputError
    from voicekit.store import StoreError
    from voicekit.voiceprints import VoiceprintError

    def fail(message: str, code: int) -> int:
        if args.debug:
            traceback.print_exc(file=sys.stderr)
        print(f"voicekit: {message}", file=sys.stderr)
        return code

    try:
        return args.func(args)
    except (CliError, AudioError, ModelError, StoreError, HookError, CaptureError, OutputError,
            VoiceprintError, DeviceError) as exc:
        return fail(f"error: {exc}", 2)
    except KeyboardInterrupt:  # Ctrl-C outside a meeting's own handling (loading models, eval…)
        return fail("interrupted", 130)
    except BrokenPipeError:  # `voicekit export out/ | head -1`: the reader has what it wanted
        _silence_stream(sys.stdout)   # stdout's buffer cannot be flushed at exit any more
        return _ReaderWatch.PIPE_EXIT_CODE
    except OSError as exc:  # a file or directory the command needed
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(f"error: {exc.strerror or exc}{where}; check the path and free space"
                    f"{'' if args.debug else ' (--debug shows where)'}", 2)
    except Exception as exc:  # noqa: BLE001 - never a traceback without --debug
        report = "report it with the traceback above" if args.debug else \
            "rerun with --debug for the traceback and report it"
        return fail(f"internal error: {type(exc).__name__}: {exc}; {report}", 1)
