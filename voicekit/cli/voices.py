"""``voicekit voices list|delete|enrol`` and the voice library behind ``--voices`` and
``--enrol-voices`` (opt-in biometric data: docs/voiceprints.md)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from voicekit.cli.common import CliError, finite_float, HelpFormatter, warn


def _library_flag(library: Path) -> str:
    """`` --library PATH`` for a command a message suggests, or "" for the default library."""
    from voicekit.voiceprints import default_library_path

    return "" if library == default_library_path() else f" --library {shlex.quote(str(library))}"


def kept_note(library: Path) -> str:
    """Said after every enrolment (docs/voiceprints.md): consent, and the commands that list and
    delete, with ``--library`` when ``library`` is not the default one."""
    where = _library_flag(library)
    return ("a voiceprint is biometric data, kept with the person's consent only: "
            f"`voicekit voices list{where}` shows the library, `voicekit voices delete NAME{where}` removes a "
            "voice for good")


def _library_file(value: str, default: str = "leave --library out") -> str:
    """argparse ``type`` of ``voices --library`` (and the check of ``--voices LIBRARY``): an empty
    path (an unset ``$LIB``) would mean the default library, and ``voices delete NAME --library
    "$LIB"`` would delete from it. ``default``: how the message says to get the default library."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the voice library path is empty (an unset variable?): give the library's "
                                         f"file, or {default} for the default library")
    return value


def _library_path(args: argparse.Namespace) -> Path:
    from voicekit.voiceprints import default_library_path

    return Path(args.voices).expanduser() if getattr(args, "voices", None) else default_library_path()


def _voice_library(args: argparse.Namespace, create: bool = False):
    from voicekit.voiceprints import VoiceLibrary, VoiceprintError

    try:
        return VoiceLibrary(_library_path(args), create=create)
    except VoiceprintError as exc:
        raise CliError(str(exc)) from exc


def _check_enrol_library(args: argparse.Namespace) -> None:
    """``--enrol-voices``: the library the meeting's voices go to must be writable now (a folder,
    another database or an unwritable path was found only when the meeting ended)."""
    from voicekit.voiceprints import VoiceprintError, check_library_writable

    try:
        check_library_writable(_library_path(args))
    except VoiceprintError as exc:
        raise CliError(str(exc)) from exc


def _voice_list(args: argparse.Namespace) -> list:
    """The voiceprints to identify with (``--voices``), or None when identification is off."""
    if getattr(args, "enrol_voices", False):
        _check_enrol_library(args)
    if getattr(args, "voices", None) is None:
        return None
    path = _library_path(args)
    if not path.is_file() and not path.is_dir():   # a folder: the library's own error below
        if args.enrol_voices:
            return []  # the library is created at the end of this meeting
        raise CliError(f"--voices: no voice library at {path}; enrol voices first "
                       "(voicekit voices enrol, or --enrol-voices)")
    library = _voice_library(args)
    try:
        voices = library.voices()
    finally:
        library.close()
    if not voices and not args.enrol_voices:
        print(f"warning: --voices: the voice library {path} holds no voice (all deleted?), so nobody will be named; "
              "enrol voices first (voicekit voices enrol, or --enrol-voices)", file=sys.stderr)
    return voices


def _voice_identifier(args: argparse.Namespace):
    from voicekit.voiceprints import VoiceIdentifier

    voices = _voice_list(args)
    return None if voices is None else VoiceIdentifier(voices)


def _report_voice_matches(pipelines: list, err, out: Path) -> None:  # noqa: ANN001 - Pipeline, rich Console
    """``--voices``: at the end of a meeting, one line naming each speaker the voice library named,
    with its similarity (it was a DEBUG log only, and docs/voiceprints.md asks the user to check
    matches: a wrong one names the wrong person), and the name a hook gave it later where that
    differs (its lines show that one); then how to correct a name after the meeting (``out``: the
    meeting folder). Nothing when the library named nobody."""
    from voicekit.voiceprints import MATCH_THRESHOLD, same_name

    said, labels = [], []
    for p in pipelines:
        for m in (p.voices.matches.values() if p is not None and p.voices is not None else ()):
            renamed = p.hooks.names.get(m.label)
            labels.append(m.label)
            said.append(f"{m.label} is {m.voice.name} (similarity {m.similarity:.3f})" +
                        (f", then named {renamed} by a hook" if renamed and not same_name(renamed, m.voice.name) else ""))
    if said:
        err.print(f"known voices: {', '.join(said)} (a match needs {MATCH_THRESHOLD}); read their lines: "
                  f"`voicekit export {shlex.quote(str(out))} --speaker-names \"{labels[0]}=…\"` corrects a wrong "
                  "name", markup=False)


def _enrol_voices(args: argparse.Namespace, pipelines: list, err) -> bool:  # noqa: ANN001
    """``--enrol-voices``: store the voiceprint of every named speaker of the meeting.

    Returns:
        False when ``--enrol-voices`` was given and did not enrol every named speaker (too little
        speech, a voice unlike the one of that name, no speaker named): the command then exits 1,
        its outputs written, so a script can tell. True otherwise.
    """
    if not args.enrol_voices:
        return True
    from rich.markup import escape

    from voicekit.voiceprints import enrol_named_speakers, same_name

    # every diarized lane of the meeting (a LiveKit room's room microphones share one label
    # allocator, so a label is one voice of one lane)
    diarized = [p for p in pipelines if p is not None and hasattr(p.diarizer, "speakers")]
    if not diarized:
        warn(err, "--enrol-voices: no speaker of this meeting was diarized with the embedded speaker "
                  "encoder (a voiceprint is its embedding; the pyannote backend and a participant's lane "
                  "give none): nothing enrolled")
        return False
    library = _voice_library(args, create=True)
    try:
        # a speaker the library named is not enrolled again (a wrong match must not reinforce
        # itself), unless a hook named it otherwise later: that name is the user's
        skip = [label for p in diarized if p.voices is not None for label, m in p.voices.matches.items()
                if same_name(p.hooks.names.get(label) or m.voice.name, m.voice.name)]
        # a meeting that went on (--append): only this session's speech, the stored one was its own
        speakers = [s for p in diarized for s in getattr(p.diarizer, "session_speakers", p.diarizer.speakers)]
        outcomes = enrol_named_speakers(library, speakers, diarized[0].hooks.names, skip=skip)
    finally:
        library.close()
    for o in outcomes:
        if o.repeated:
            err.print(f"the voice of {escape(o.name)} from this speech ({escape(', '.join(o.labels))}, "
                      f"{o.seconds:.1f} s) is in {escape(str(library.path))} already (this meeting was enrolled "
                      "before): nothing added")
        elif o.enrolled is not None:
            merged = (f"; {o.enrolled.seconds:.1f} s in all, {o.enrolled.meetings} enrolments: added to the "
                      "voice of that name" if o.enrolled.meetings > 1 else "")
            err.print(f"enrolled the voice of {escape(o.name)} ({escape(', '.join(o.labels))}, "
                      f"{o.seconds:.1f} s of speech{merged}) in {escape(str(library.path))}")
        else:
            warn(err, f"not enrolled: {escape(o.reason)}")
    if any(o.enrolled is not None for o in outcomes):
        err.print(escape(kept_note(library.path)))
    if not outcomes and skip:
        err.print(f"--enrol-voices: the only speakers named ({escape(', '.join(skip))}) were named by the voice "
                  "library, which does not enrol them again (a wrong match must not reinforce itself): nothing "
                  "enrolled")
        return True
    if not outcomes:
        warn(err, "--enrol-voices: no speaker was named (--speaker-names or a hook); nothing "
                  "enrolled")
    return bool(outcomes) and all(o.enrolled is not None for o in outcomes)


MEETINGS_KEEP_NOTE = ("meetings in which a deleted voice was named keep the name, and those run with "
                      "--keep-embeddings can still recognise it: `voicekit export OUT --drop-embeddings` "
                      "deletes their embeddings (docs/privacy.md); a meeting running now loaded the "
                      "library when it started and names the voice until it ends: restart it")
ENROL_FAILED = "--enrol-voices did not enrol every named speaker (above): exit code 1"


def cmd_voices(args: argparse.Namespace) -> int:
    """``voicekit voices list | delete NAME | delete --all | enrol NAME AUDIO``."""
    import datetime

    from voicekit.voiceprints import VoiceprintError

    path = _library_path(args)
    if args.action == "list":
        if not path.is_file() and not path.is_dir():   # a folder: the library's own error below
            print(f"no voice library at {path} (no voice enrolled)")
            return 0
        library = _voice_library(args)
        try:
            voices = library.voices()
        finally:
            library.close()
        print(f"{len(voices)} voice{'s' if len(voices) != 1 else ''} in {path}")
        for v in voices:
            when = datetime.datetime.fromtimestamp(v.updated).strftime("%Y-%m-%d %H:%M")
            print(f"  {v.name}  {v.seconds:.1f} s of speech, {v.meetings} enrolment"
                  f"{'s' if v.meetings != 1 else ''}, updated {when}")
        return 0
    if args.action == "delete":
        if bool(args.all) == bool(args.name):
            raise CliError("voices delete: give a NAME or --all, not both" if args.all else
                           "voices delete: give a NAME or --all")
        if not path.is_file() and not path.is_dir():   # a folder: the library's own error below
            if args.all:   # nothing to delete: done (a privacy script may run it on every machine)
                print(f"no voice library at {path}: nothing to delete")
                return 0
            raise CliError(f"no voice library at {path}, so no voice named {args.name!r}; see voicekit voices list"
                           f"{_library_flag(path)}")
        library = _voice_library(args)
        try:
            if args.all:
                n = library.delete_all()
                print(f"deleted {n} voice{'s' if n != 1 else ''} from {path}")
                if n:
                    print(MEETINGS_KEEP_NOTE)
                return 0
            deleted = library.delete(args.name)
            if deleted is None:
                raise CliError(f"no voice named {args.name!r} in {path}; see voicekit voices list"
                               f"{_library_flag(path)}")
        finally:
            library.close()
        print(f"deleted the voice of {deleted} from {path}")
        print(MEETINGS_KEEP_NOTE)
        return 0
    # enrol
    from voicekit.audio import SAMPLE_RATE, load_audio, probe
    from voicekit.diarization.encoder import SpeakerEncoder
    from voicekit.voiceprints import MIN_ENROL_SECONDS, check_enrolment, embed_speech

    if args.start is not None and args.end is not None and args.end <= args.start:
        raise CliError(f"--end {args.end:g} is not after --start {args.start:g}: give the start and the end "
                       "of their speech in seconds")
    info = probe(args.audio)
    if info.declared_duration is not None:
        print(f"warning: {args.audio} is truncated: only its first {info.duration:.1f} s of "
              f"{info.declared_duration:.1f} s can be used", file=sys.stderr)
    samples = load_audio(args.audio, channel=args.channel)
    lo = int(round((args.start or 0.0) * SAMPLE_RATE))
    # an --end at or past the recording's end means its end (a duration shown rounded, 42.0 for 41.984 s)
    hi = len(samples) if args.end is None else min(len(samples), int(round(args.end * SAMPLE_RATE)))
    if not 0 <= lo < hi:
        raise CliError(f"--start must lie inside the recording (0 to {len(samples) / SAMPLE_RATE:.3f} s), "
                       f"got {args.start:g}")
    try:
        vector, seconds = embed_speech(samples[lo:hi], SpeakerEncoder(), vad=args.vad)
        check_enrolment(args.name, seconds, MIN_ENROL_SECONDS)   # before a library file is made
        library = _voice_library(args, create=True)
        try:
            repeated = library.holds(args.name, vector, seconds)
            voice = library.enrol(args.name, vector, seconds, min_seconds=MIN_ENROL_SECONDS)
        finally:
            library.close()
    except VoiceprintError as exc:
        raise CliError(str(exc)) from exc
    if repeated:
        print(f"the voice of {voice.name} from this speech ({seconds:.1f} s) is in {path} already: nothing added "
              f"({voice.seconds:.1f} s in all)")
        return 0
    print(f"enrolled the voice of {voice.name} ({seconds:.1f} s of speech; {voice.seconds:.1f} s in all) in {path}")
    print(kept_note(path))
    return 0


EPILOG_VOICES = """\
examples:
  voicekit voices enrol Diane diane.wav             # a recording of Diane alone (>= 8 s of speech)
  voicekit voices enrol Diane meeting.wav --start 62 --end 95
  voicekit replay meeting.wav --out out/ --voices   # name known voices
  voicekit replay meeting.wav --out out/ --speaker-names "Speaker A=Diane" --enrol-voices
  voicekit voices list
  voicekit voices delete Diane
  voicekit voices delete --all

A voiceprint is biometric data: enrol a person only with their consent. Deleting removes the row
and scrubs it from the file. The library is $VOICEKIT_VOICES, else voices.sqlite in the user data
directory; `voices list|delete|enrol --library PATH` chooses another. See docs/voiceprints.md.
"""


def _voices_parser(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("voices", help="known voices: list, delete or enrol voiceprints (opt-in)",
                       description="The voice library: voiceprints that name speakers in later "
                                   "meetings (--voices). Biometric data: see docs/voiceprints.md.",
                       epilog=EPILOG_VOICES, formatter_class=HelpFormatter)
    vsub = p.add_subparsers(dest="action", required=True)
    for name, help_text, description in (
            ("list", "list the enrolled voices",
             "List the voices of the library: each name with its seconds of speech, enrolments and last "
             "update."),
            ("delete", "delete a voice (or --all)",
             "Delete a voice for good: its row is removed and its bytes scrubbed from the file. NAME matches "
             "whatever its case or Unicode form ('diane' deletes Diane); a NAME the library lacks is an error "
             "(exit 2), so a misspelt name never passes for deleted. --all deletes every voice; with no "
             "library there is nothing to delete (exit 0)."),
            ("enrol", "enrol a voice from a recording of that person (also: enroll)",
             "Enrol a voice from a recording in which only that person speaks (or a stretch of one, "
             "--start/--end). Enrolling a name again adds the speech to its voice.")):
        q = vsub.add_parser(name, help=help_text, description=description,
                            aliases=["enroll"] if name == "enrol" else [])
        q.set_defaults(action=name)
        q.add_argument("--library", dest="voices", default=None, metavar="PATH", type=_library_file,
                       help="the voice library file (default $VOICEKIT_VOICES, else voices.sqlite in "
                            "the user data directory)")
        if name == "delete":
            q.add_argument("name", nargs="?", default=None, help="the person's name")
            q.add_argument("--all", action="store_true", help="delete every voice")
        elif name == "enrol":
            q.add_argument("name", help="the person's name")
            q.add_argument("audio", help="a recording in which only this person speaks (or use --start/--end): "
                                         "at least 8 s of their speech, 12-15 s for a steady voiceprint")
            q.add_argument("--start", type=finite_float, default=None, help="start of their speech (seconds)")
            q.add_argument("--end", type=finite_float, default=None, help="end of their speech (seconds)")
            q.add_argument("--channel", type=int, default=None, help="use this channel (0-based)")
            q.add_argument("--vad", default="silero", help="silero (default) or webrtc")
    p.set_defaults(func=cmd_voices)
