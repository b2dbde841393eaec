"""The voicekit command: one subcommand per task.

    voicekit replay meeting.wav --out out/      a recording through the pipeline, live lines
    voicekit export out/ [--refine]             rewrite the outputs from the meeting store
    voicekit eval [--files ID …]                DER / WER / RTF on ../shared/eval
    voicekit models [--verify]                  where each model comes from, checksums
    voicekit devices                            list audio input devices
    voicekit mic [--device NAME|INDEX] --out out/   the shared conference microphone, live
    voicekit livekit --url URL --token T --out out/ a LiveKit room bot, one lane per participant
    voicekit voices list|delete NAME|delete --all|enrol NAME AUDIO   known voices (opt-in)
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from voicekit.devices import COMPUTE_TYPES

if TYPE_CHECKING:
    from voicekit.hooks import HookRunner
    from voicekit.turns import SpeakerTurn

EPILOG_REPLAY = """\
examples:
  voicekit replay meeting.wav --out out/
  voicekit replay call.mp3 --out out/ --speaker-names "Speaker A=Diane,Speaker B=Sheila"
  voicekit replay meeting.flac --out out/ --quiet --refine --num-speakers 3
  voicekit replay meeting.wav --out out/ --realtime        # paced at 1x, as live capture
  voicekit replay meeting.wav --out out/ --members members.yaml --explain

outputs in OUT: <stem>.json (turns with words, times in seconds, speaker, confidence),
<stem>.rttm, <stem>.srt, <stem>.vtt, <stem>.txt, and meeting.sqlite (the store every output is
rebuilt from with `voicekit export OUT`). With --refine also <stem>.refined.*.

With --members, every committed turn goes through the turn-taking ladder (docs/turn-taking.md)
under its speaker's attribution label (the speaker name after renames, ranked against look-alike
names); no model is called: a dry run in which each chosen member counts as having answered.
--explain prints each turn with its decision and rung, and a count per rung at the end.
"""


class CliError(Exception):
    """An error to print as one line (exit code 2)."""


def _pipeline_args(p: argparse.ArgumentParser, device_flag: str = "--device") -> None:
    g = p.add_argument_group("models and devices")
    g.add_argument("--model", default="tiny.en",
                   help="Whisper model: tiny.en (default, English), base (multilingual; pip install "
                        "'voicekit[multilingual]'), or a local CTranslate2 directory")
    g.add_argument("--language", default=None, help="language code for multilingual models (default: detect)")
    g.add_argument(device_flag, dest="device", default="cpu", choices=["cpu", "cuda"],
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
    g.add_argument("--vad-threshold", type=float, default=None, metavar="P",
                   help="speech probability at which a frame is speech (default 0.5; 0.3 catches more "
                        "quiet far-field speech, docs/accuracy.md)")
    g.add_argument("--hangover", type=float, default=None, metavar="SECONDS",
                   help="silence that ends an utterance (default 0.6)")
    g.add_argument("--max-utterance", type=float, default=None, metavar="SECONDS",
                   help="longest utterance before it is closed anyway (default 10)")
    g.add_argument("--diarizer", default="embedded", metavar="embedded|pyannote[:PATH_OR_NAME]",
                   help="embedded (default) or pyannote.audio: a local pipeline directory or a Hugging "
                        "Face name already in the local cache (default pyannote/speaker-diarization-"
                        "community-1; pip extra, see docs/pyannote.md)")
    g.add_argument("--diarizer-mode", default="auto", choices=["auto", "offline", "streaming"],
                   help="pyannote only: offline (the whole recording, replay only) or streaming (5 s "
                        "window every 0.5 s); auto: offline for replay without --realtime, else streaming")
    g.add_argument("--num-speakers", type=int, default=None, help="exact number of speakers, when known")
    g.add_argument("--min-speakers", type=int, default=None, help="at least this many speakers")
    g.add_argument("--max-speakers", type=int, default=None, help="at most this many speakers")


def _hook_args(p: argparse.ArgumentParser, names_scope: str = "", decisions: bool = False) -> None:
    g = p.add_argument_group("hooks (docs/hooks.md)")
    g.add_argument("--speaker-names", default=None, metavar="MAP_OR_FILE",
                   help=f"'Speaker A=Diane,Speaker B=Sheila'{names_scope}, or a file with one "
                        "'Speaker A = Diane' per line")
    g.add_argument("--hook", action="append", metavar="SCRIPT.py",
                   help="a Python file defining on_transcription(turn)"
                        + (", and/or on_speak_decision(decision) for --members" if decisions else "")
                        + " (repeatable; docs/hooks.md)")
    g.add_argument("--hook-timeout", type=float, default=2.0, help="seconds a hook may run (default 2)")


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


def _hooks(args: argparse.Namespace, err):  # noqa: ANN001 - rich Console
    from voicekit.hooks import HookRunner, HookTrigger, parse_speaker_names
    from voicekit.turns import is_speaker_label

    if args.hook_timeout <= 0:
        raise CliError(f"--hook-timeout must be a positive number of seconds, got {args.hook_timeout}")
    hooks = HookRunner(timeout=args.hook_timeout)
    if args.speaker_names:
        text = args.speaker_names
        path = Path(text)
        if "=" not in text and path.is_file():
            text = path.read_text(encoding="utf-8")
        elif "=" not in text:
            raise CliError(f"--speaker-names {text!r}: give 'Speaker A=Diane,…' or an existing names file")
        try:
            names = parse_speaker_names(text)
        except ValueError as exc:
            raise CliError(f"--speaker-names: {exc}") from exc
        if args.command != "livekit":
            # only a LiveKit room's turns carry other speakers (its participants' names)
            other = [label for label in names if not is_speaker_label(label)]
            if other:
                raise CliError(f"--speaker-names: {', '.join(map(repr, other))} can never name a speaker of "
                               f"`voicekit {args.command}`: its speakers are labelled 'Speaker A', 'Speaker B'… "
                               "(write 'Speaker A=Diane')")
        hooks.set_names(names)
    for script in args.hook or []:
        hooks.load_script(script)
    unused = hooks.registered(HookTrigger.ON_SPEAK_DECISION)
    if unused and not getattr(args, "members", None):
        err.print(f"[yellow]{', '.join(unused)} will not be called: speak decisions are made only with "
                  "`voicekit replay --members members.yaml` (docs/turn-taking.md)[/yellow]")
    return hooks


_AUDIO_SUFFIXES = {".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".aac", ".mp4", ".webm", ".raw", ".pcm"}


def _library_option(value: str) -> str:
    """``--voices LIBRARY``: its optional value would also take a recording written after it."""
    if Path(value).suffix.lower() in _AUDIO_SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"took {value!r}, a recording, as the voice library: write --voices after the recording "
            "(`voicekit replay meeting.wav --voices`), or --voices=LIBRARY")
    return value


def _voice_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("known voices (opt-in, biometric data: docs/voiceprints.md)")
    g.add_argument("--voices", nargs="?", const="", default=None, metavar="LIBRARY", type=_library_option,
                   help="name speakers whose voice matches an enrolled voiceprint; LIBRARY is the "
                        "voice library file (default $VOICEKIT_VOICES, else voices.sqlite in the user "
                        "data directory)")
    g.add_argument("--enrol-voices", action="store_true",
                   help="at the end, store the voiceprint of every speaker named by --speaker-names or "
                        "a hook in the voice library (only with the speakers' consent)")


def _meeting_args(p: argparse.ArgumentParser, append: bool = True) -> None:
    """``--overwrite`` / ``--append`` (live capture only): what to do with a meeting already in OUT."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--overwrite", action="store_true",
                   help="replace the meeting already in OUT: its store and the outputs written from it "
                        "(<stem>.*, <stem>.refined.*) are deleted first")
    if append:
        g.add_argument("--append", action="store_true",
                       help="go on with the meeting already in OUT (after a dropped connection or a "
                            "crash): this run's times continue after its audio, new speakers are labelled "
                            "after its speakers, and the outputs are rewritten from all its turns; a "
                            "returning voice keeps its label when every session ran with --keep-embeddings "
                            "(voicekit mic)")


def _keep_embeddings_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep-embeddings", action="store_true",
                   help="keep the speaker embeddings in the meeting store so that `voicekit export OUT "
                        "--refine` can re-cluster the meeting later (about 15 MB per hour of speech; they "
                        "can identify voices: `voicekit export OUT --drop-embeddings` deletes them)")


def _library_path(args: argparse.Namespace) -> Path:
    from voicekit.voiceprints import default_library_path

    return Path(args.voices).expanduser() if getattr(args, "voices", None) else default_library_path()


def _voice_library(args: argparse.Namespace, create: bool = False):
    from voicekit.voiceprints import VoiceLibrary, VoiceprintError

    try:
        return VoiceLibrary(_library_path(args), create=create)
    except VoiceprintError as exc:
        raise CliError(str(exc)) from exc


def _voice_list(args: argparse.Namespace) -> list:
    """The voiceprints to identify with (``--voices``), or None when identification is off."""
    if getattr(args, "voices", None) is None:
        return None
    path = _library_path(args)
    if not path.is_file():
        if args.enrol_voices:
            return []  # the library is created at the end of this meeting
        raise CliError(f"--voices: no voice library at {path}; enrol voices first "
                       "(voicekit voices enrol, or --enrol-voices)")
    library = _voice_library(args)
    try:
        return library.voices()
    finally:
        library.close()


def _voice_identifier(args: argparse.Namespace):
    from voicekit.voiceprints import VoiceIdentifier

    voices = _voice_list(args)
    return None if voices is None else VoiceIdentifier(voices)


def _enrol_voices(args: argparse.Namespace, pipelines: list, err) -> None:  # noqa: ANN001
    """``--enrol-voices``: store the voiceprint of every named speaker of the meeting."""
    if not args.enrol_voices:
        return
    from voicekit.voiceprints import enrol_named_speakers

    diarized = [p for p in pipelines if p is not None and hasattr(p.diarizer, "speakers")]
    if len(diarized) != 1:
        err.print(f"[yellow]--enrol-voices: {len(diarized)} diarized lanes; names are per label, so "
                  "voices are enrolled only from a meeting with exactly one[/yellow]")
        return
    pipe = diarized[0]
    library = _voice_library(args, create=True)
    try:
        skip = pipe.voices.matches if pipe.voices is not None else ()
        # a meeting that went on (--append): only this session's speech, the stored one was its own
        speakers = getattr(pipe.diarizer, "session_speakers", pipe.diarizer.speakers)
        outcomes = enrol_named_speakers(library, speakers, pipe.hooks.names, skip=skip)
    finally:
        library.close()
    for o in outcomes:
        if o.enrolled is not None:
            err.print(f"enrolled the voice of {o.name} ({', '.join(o.labels)}, {o.seconds:.1f} s of speech) "
                      f"in {library.path}")
        else:
            err.print(f"[yellow]not enrolled: {o.reason}[/yellow]")
    if not outcomes:
        err.print("[yellow]--enrol-voices: no speaker was named (--speaker-names or a hook); nothing "
                  "enrolled[/yellow]")


def speak_decisions(members: str | Path, *, explain: bool = False, out: TextIO | None = None,
                    hooks: "HookRunner | None" = None) -> "Callable[[SpeakerTurn], None]":
    """An ``on_turn`` callback that runs the turn-taking ladder on every committed turn.

    Each turn is labelled as attribution does (``voicekit.attribution``): the speaker's name is
    ``turn.sender_name`` (a rename from ``--speaker-names`` or a hook, else the diarization label
    ``Speaker A``), the channel ``turn.channel``, and the rank against look-alike names is fixed
    in an in-memory author register when the turn arrives (A11, A12). The turn and its label go
    through :func:`voicekit.turntaking.replay.replay_room` with one :class:`TurnTaker` for the
    whole meeting and no director or model (T9: T4 is skipped; the chosen members are recorded
    as having answered, so continuation and least-recent order behave as in a meeting).

    Args:
        members: a ``members.yaml`` file (see ``docs/turn-taking.md``).
        explain: print each turn with its decision and rung (``format_step``) to ``out``.
        out: where ``explain`` prints (default: stdout at call time).
        hooks: a runner whose ``ON_SPEAK_DECISION`` hooks receive every decision.

    Returns:
        The callback. Its ``steps`` attribute lists the :class:`ReplayStep` of every turn so far,
        its ``summary()`` gives the count line (``3 turns decided: fallback=1, mention=2; answered: Iris 3``).

    Raises:
        CliError: when the members file cannot be read or is invalid.
    """
    import sqlite3
    import threading

    from voicekit.attribution import AuthorRegister, meeting_lock
    from voicekit.turntaking import MembersError, TurnTaker, load_members
    from voicekit.turntaking.replay import format_step, replay_room, summarize_steps

    try:
        room = load_members(members)
    except OSError as exc:
        raise CliError(f"--members {members}: cannot read it ({exc.strerror or exc})") from exc
    except MembersError as exc:
        raise CliError(f"--members {members}: {exc}") from exc
    taker = TurnTaker(room)
    if hooks is not None:
        taker.attach_hooks(hooks)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    AuthorRegister.ensure_schema(conn)
    register = AuthorRegister("replay")
    lock = threading.Lock()
    steps: list = []

    def on_turn(turn: "SpeakerTurn") -> None:
        with lock:
            named = turn.replace(metadata={**turn.metadata, "sender_name": turn.sender_name})
            with meeting_lock(conn):
                label = register.record_turn(conn, len(steps) + 1, named)
            if label is None:  # not a person's turn (an assistant reply, an instruction)
                return
            for step in replay_room([(turn, label)], taker):
                steps.append(step)
                if explain:
                    print(format_step(step), file=out or sys.stdout, flush=True)

    on_turn.steps = steps  # type: ignore[attr-defined]
    on_turn.summary = lambda: summarize_steps(steps)  # type: ignore[attr-defined]
    return on_turn


def cmd_replay(args: argparse.Namespace) -> int:
    if args.explain and not args.members:
        raise CliError("--explain shows turn-taking decisions: give --members members.yaml too")
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from voicekit.audio import RawPcm
    from voicekit.outputs import REFINED_SUFFIX, format_line
    from voicekit.pipeline import Components, Pipeline, run_per_channel
    from voicekit.sources import FileSource
    from voicekit.store import StoreError

    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if args.per_channel and args.channel is not None:
        raise CliError("--per-channel keeps every channel as its own speaker: drop --channel")
    if args.per_channel and (args.voices is not None or args.enrol_voices):
        raise CliError("--voices/--enrol-voices name diarized speakers, but with --per-channel each channel "
                       "is a speaker: drop --voices/--enrol-voices")
    if args.per_channel and args.refine:
        raise CliError("--refine re-clusters speakers, but with --per-channel each channel is a speaker: "
                       "drop --refine")
    raw = RawPcm(args.raw_rate, args.raw_format, args.raw_channels) if args.raw_rate else None
    source = FileSource(args.audio, realtime=args.realtime, channel=args.channel, per_channel=args.per_channel,
                        raw=raw)
    if args.per_channel and source.info.channels == 1:
        raise CliError(f"{source.path} has one channel: --per-channel makes each channel a speaker, so the whole "
                       "recording would be one speaker; drop --per-channel to diarize it")
    out = Path(args.out)
    _check_writable(out)
    stem = _check_stem(args.stem) or source.path.stem
    options = _options(args, whole_recording=True)
    if options.pyannote is not None and args.per_channel:
        raise CliError("--per-channel makes each channel a speaker, so there is nothing to diarize: drop "
                       "--diarizer pyannote or --per-channel")
    if options.pyannote is not None and args.refine:
        raise CliError("--refine re-clusters the embedded diarizer's speaker embeddings; with --diarizer "
                       "pyannote drop --refine (offline mode already diarizes the whole recording)")
    hooks = _hooks(args, err)
    named = set(hooks.names)  # --speaker-names, before any hook renames
    voices = _voice_identifier(args)
    decide = speak_decisions(args.members, explain=args.explain, hooks=hooks) if args.members else None
    session = _make_session(args, out)  # a missing API key stops here: nothing written, no model loaded
    store_path = out / "meeting.sqlite"
    _check_existing_meeting(store_path, args)
    if not args.quiet:
        err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    diarizer = None
    if options.pyannote is not None and options.pyannote.mode == "offline":
        from voicekit.audio import load_audio
        from voicekit.diarization.pyannote_backend import PyannoteOfflineDiarizer

        t = time.monotonic()
        d = options.diarizer
        segments = components.pyannote.diarize(load_audio(source.path, channel=args.channel),
                                                d.num_speakers, d.min_speakers, d.max_speakers)
        diarizer = PyannoteOfflineDiarizer(segments)
        err.print(f"[dim]pyannote diarized the whole recording in {time.monotonic() - t:.1f} s: "
                  f"{_plural(len({s.label for s in segments}), 'speaker')}, "
                  f"{_plural(len(segments), 'speaker turn')}[/dim]")
    store = _fresh_store(out, append=False)  # replaced: --overwrite, or a store with no turn
    meta = {"source": str(source.path), "stem": stem, "duration": round(source.info.duration, 3),
            "sample_rate": source.info.sample_rate, "channels": source.info.channels,
            "model": args.model, "vad": args.vad}
    if options.pyannote is not None:
        meta["diarizer"] = f"pyannote:{options.pyannote.source} ({options.pyannote.mode})"
    store.set_meta(**meta)
    if hooks.names:
        store.set_speaker_names(hooks.names)
    pipeline_kw = {}
    if args.quiet:
        progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            TextColumn("{task.completed:.0f}/{task.total:.0f} s"), TimeRemainingColumn(),
                            console=err, transient=True, disable=not err.is_terminal)  # no bar in a log
        progress.start()
        task = progress.add_task(stem, total=max(source.info.duration, 0.01))
        pipeline_kw["progress"] = lambda s: progress.update(task, completed=s)
        on_turn = None
    else:
        progress = None
        on_turn = lambda t: console.print(format_line(t), markup=False)  # noqa: E731
    if decide is not None:
        # --explain prints each turn with its decision instead of the plain line
        on_turn = decide if (args.explain or on_turn is None) else _chain(on_turn, decide)
    broadcaster = _start_session(args, session, store_path)              # --session (realtime)
    if broadcaster is not None:
        on_turn = _chain(on_turn, broadcaster.on_turn)
    pipe = None
    pipes: list[Pipeline] = []   # the pipeline, or one per channel: what they consumed and finished
    if not args.per_channel:
        pipe = Pipeline(options, components, hooks=hooks, store=store, on_turn=on_turn,
                        realtime_clock=args.realtime, voices=voices, diarizer=diarizer)
        pipes.append(pipe)
    # the first Ctrl-C (or SIGTERM) stops reading the recording and lets every utterance heard so
    # far be committed; a second Ctrl-C aborts what is left
    def stop() -> None:
        source.stop()
        err.print("[yellow]stopping: committing the utterances heard so far (Ctrl-C again to abort)…[/yellow]")

    interrupted, result, session_missed = False, None, False
    try:
        try:
            with _GracefulStop(stop) as graceful:
                if pipe is not None:
                    result = pipe.run(source, progress=pipeline_kw.get("progress"), refine=False)
                else:
                    result = run_per_channel(source, source.info.channels, options, components, hooks=hooks,
                                             store=store, on_turn=on_turn, progress=pipeline_kw.get("progress"),
                                             realtime_clock=args.realtime, pipes=pipes)
        except KeyboardInterrupt:  # the second Ctrl-C
            result = None
        interrupted = graceful.requested or result is None
        if interrupted:
            meta["duration"], note = _interrupt_note(pipes, "interrupted")
            err.print(f"[yellow]{note}; writing outputs[/yellow]")
    except StoreError as exc:
        kept = _committed_turns(store_path)
        raise CliError(f"{exc}; the {_plural(kept, 'turn')} committed before {'is' if kept == 1 else 'are'} "
                       f"kept: free space, then run `voicekit export {out}` to write the outputs") from exc
    finally:
        if progress is not None:
            progress.stop()
        try:
            if interrupted:
                store.set_meta(duration=meta["duration"])   # what was heard, not the file's length
            store.set_speaker_names(pipe.speaker_names() if pipe is not None else hooks.names)
        except StoreError as exc:
            logging.getLogger("voicekit.cli").warning("%s", exc)
        hooks.close()
        session_missed, stopped = _close_session(broadcaster, args, err)
        interrupted = interrupted or stopped
    try:
        written = _write_outputs(store.turns(), out, stem, meta)
        refined_line = None
        later = (f"refine later with `voicekit export {out} --refine`" if options.keep_embeddings else
                 f"run the replay again with --refine, or with --keep-embeddings to refine later with "
                 f"`voicekit export {out} --refine`")
        if args.refine and interrupted:
            err.print(f"[yellow]the replay was interrupted: no refined outputs ({later})[/yellow]")
        elif args.refine:
            try:
                pipe.refine()
            except KeyboardInterrupt:
                interrupted = True
                err.print(f"[yellow]refinement interrupted: the live outputs are written; no refined ones "
                          f"({later})[/yellow]")
            else:
                written += _write_outputs(store.turns(refined=True), out, stem, {**meta, "refined": True},
                                          suffix=REFINED_SUFFIX)
                refined_line = _refined_summary(store)
        unmatched = _unmatched_names(named, store)
    finally:
        store.close()
    _enrol_voices(args, [pipe], err)
    if result is not None:
        err.print(f"[dim]{_turns_summary(result, speed=True)}"
                  + (f", {result.blocked} blocked by hooks" if result.blocked else "")
                  + (f", {len(hooks.failures)} hook failures" if hooks.failures else "") + "[/dim]")
    if refined_line:
        err.print(f"[dim]{refined_line}[/dim]")
    if unmatched and result is not None:
        err.print(f"[yellow]{unmatched}[/yellow]")
    if decide is not None and args.explain:
        print(decide.summary())  # type: ignore[attr-defined]
    elif decide is not None:  # without --explain the decisions went only to the hooks: say what they were
        err.print(f"[dim]turn-taking: {decide.summary()} (--explain shows each)[/dim]")  # type: ignore[attr-defined]
    err.print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    _session_log_line(session, err)
    if interrupted:
        return 130
    if session_missed:
        err.print(_session_missed_line(args))
        return 1
    if source.info.declared_duration is not None:
        err.print(f"{source.path} is truncated: only its first {source.info.duration:.1f} s of "
                  f"{source.info.declared_duration:.1f} s were transcribed (exit code 1)")
        return 1
    return 0


def _interrupt_note(pipes, verb: str) -> tuple[float, str]:  # noqa: ANN001
    """After Ctrl-C: the seconds of audio every pipeline consumed in this session and the line
    that says what was committed (``verb at HH:MM:SS.s: …``, in meeting time)."""
    from voicekit.audio import SAMPLE_RATE
    from voicekit.outputs import clock

    seconds = round(min((p.consumed for p in pipes), default=0) / SAMPLE_RATE, 3)
    at = f"{verb} at {clock(seconds + min((p.start_time for p in pipes), default=0.0), digits=1)}"
    if all(p.finished for p in pipes):
        return seconds, f"{at}: every utterance heard so far was committed"
    return seconds, f"{at} while the last utterances were being committed: only the turns committed before are kept"


def _write_outputs(turns, out: Path, stem: str, meta: dict, suffix: str = "") -> list[Path]:  # noqa: ANN001
    """:func:`voicekit.outputs.write_all`, its failure told as one line with the way back."""
    from voicekit.outputs import OutputError, write_all

    try:
        return write_all(turns, out, stem, meta, suffix=suffix)
    except OutputError as exc:
        n = len(turns)
        raise CliError(f"{exc}; the {_plural(n, 'turn')} {'is' if n == 1 else 'are'} safe in "
                       f"{out / 'meeting.sqlite'}: free space, then run `voicekit export {out}`") from exc


# --- realtime session (--session) -----------------------------------------------------------
def _make_session(args: argparse.Namespace, out: Path, echo: bool = True):
    """The realtime session for ``--session`` (None without it); see docs/realtime.md.

    Made before the meeting store and the models: it only checks the options (the provider's
    API key, the log path), it connects later (:func:`_start_session`). ``echo``: the local
    session also prints its events (not with ``--quiet``; the live commands never, their live
    lines are on the terminal).

    Raises:
        CliError: no API key for the provider, a bad option, a ``--session-log`` that is a folder.
    """
    if not args.session:
        given = [f"--{k.replace('_', '-')}" for k in ("session_model", "session_base_url", "session_log",
                                                       "session_instructions") if getattr(args, k, None)]
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

    if args.session_timeout < 0:
        raise CliError(f"--session-timeout must be 0 or more seconds, got {args.session_timeout}")
    log_path = Path(args.session_log) if args.session_log else (
        out / "session.jsonl" if args.session == "local" else None)
    if log_path is not None and log_path.is_dir():
        raise CliError(f"--session-log {log_path} is a folder: give a file name, e.g. {log_path / 'session.jsonl'}")
    if log_path is not None:
        blocked = next((d for d in log_path.parents if d.exists() and not d.is_dir()), None)
        if blocked is not None:
            raise CliError(f"--session-log {log_path}: {blocked} is a file, not a folder; give a path in a folder")
        if log_path.exists() and not os.access(log_path, os.W_OK):
            raise CliError(f"--session-log {log_path} cannot be written (permissions); give another path")
    instructions = args.session_instructions
    if instructions is not None and "\n" not in instructions and Path(instructions).is_file():
        try:
            instructions = Path(instructions).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"--session-instructions {instructions}: cannot read it as UTF-8 text ({exc})") from exc
    if instructions is not None and not instructions.strip():
        raise CliError("--session-instructions is empty: give the assistant's instructions, or leave it out")
    try:
        return make_session(args.session, model=args.session_model, base_url=args.session_base_url,
                            log_path=str(log_path) if args.session == "local" and log_path else None,
                            echo=stdout_echo if echo and not getattr(args, "quiet", False) else None,
                            instructions=instructions)
    except ValueError as exc:
        raise CliError(f"--session {args.session}: {exc}") from exc


def _start_session(args: argparse.Namespace, session, store_path: Path):  # noqa: ANN001 - RealtimeSession
    """The started broadcaster that feeds ``session`` (from :func:`_make_session`) every turn
    committed to ``store_path``; None without ``--session``."""
    if session is None:
        return None
    import json

    from voicekit.realtime import Broadcaster

    on_event = None
    if args.session_log and args.session != "local":
        log_path = Path(args.session_log)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        fh = log_path.open("a", encoding="utf-8")

        def on_event(ev) -> None:
            fh.write(json.dumps({"kind": ev.kind, "text": ev.text, "event_id": ev.event_id},
                                ensure_ascii=False) + "\n")
            fh.flush()
    session_id = f"{args.session}:{args.session_model or 'default'}"
    return Broadcaster(session, store_path, session_id=session_id, on_event=on_event).start()


def _close_session(broadcaster, args: argparse.Namespace, err) -> tuple[bool, bool]:  # noqa: ANN001
    """At the end of a meeting, wait up to ``--session-timeout`` for the live session to take
    what is queued. Returns ``(missed, stopped)``: it was not sent every turn; a Ctrl-C stopped the
    wait (the outputs are written all the same)."""
    if broadcaster is None:
        return False, False
    if broadcaster.backlog and args.session_timeout > 0:
        err.print(f"[dim]waiting up to {args.session_timeout:g} s for the live session to take "
                  f"{_plural(broadcaster.backlog, 'item')} still queued (Ctrl-C gives up)…[/dim]")
    try:
        return not broadcaster.close(timeout=args.session_timeout), False
    except KeyboardInterrupt:
        err.print("[yellow]stopped waiting for the live session (the turns it was not sent are in the store); "
                  "writing outputs[/yellow]")
        return False, True


def _session_missed_line(args: argparse.Namespace) -> str:
    """The closing error of a meeting whose live session was not sent every turn (exit code 1)."""
    return (f"[red]voicekit: error: the live session ({args.session}) was not sent every turn within "
            f"--session-timeout {args.session_timeout:g} s (see the warnings above); the transcript is "
            "complete in the outputs and the store, and `voicekit mic`/`livekit --append` with the same "
            "session options sends the rest (exit code 1)[/red]")


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


def _chain(*callbacks):
    live = [c for c in callbacks if c is not None]

    def on_turn(turn) -> None:
        for c in live:
            c(turn)
    return on_turn


def _session_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("live model session (docs/realtime.md)")
    g.add_argument("--session", default=None, choices=["local", "openai", "gemini"],
                   help="feed every committed turn into a live model session: local (no API key; "
                        "writes what a provider would be sent to OUT/session.jsonl, and replay prints "
                        "it), openai (OPENAI_API_KEY) or gemini (GEMINI_API_KEY or GOOGLE_API_KEY)")
    g.add_argument("--session-model", default=None, help="the session's model (default per provider)")
    g.add_argument("--session-base-url", default=None,
                   help="provider base URL (openai: ws(s)://…/v1 for the WebSocket base or https://…/v1)")
    g.add_argument("--session-log", default=None, metavar="PATH",
                   help="local: the JSON lines file (default OUT/session.jsonl); openai/gemini: the "
                        "session's events as JSON lines")
    g.add_argument("--session-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="at the end, how long to wait for the session to take what is queued (default 10)")
    g.add_argument("--session-instructions", default=None, metavar="TEXT|FILE",
                   help="the session's instructions (the assistant's system prompt: OpenAI's session "
                        "instructions, Gemini's system_instruction), as text or a UTF-8 file; the "
                        "attribution note never goes here (docs/attribution.md A9)")


def _read_store(store_path: Path, sql: str) -> list[tuple] | None:
    """The rows of one query on an existing meeting store, read without the store class (no
    schema is created, the connection is closed: no -wal/-shm left behind); None when the file is
    not a readable store."""
    import contextlib
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(store_path)) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return None


def _committed_turns(store_path: Path) -> int:
    """Turns in an existing meeting store (0 for an empty or unreadable one, e.g. a failed start)."""
    rows = _read_store(store_path, "SELECT COUNT(*) FROM turns")
    return rows[0][0] if rows else 0


def _stored_meta(store_path: Path) -> dict:
    """The metadata of an existing meeting store ({} for an unreadable one)."""
    import json

    try:
        return {k: json.loads(v) for k, v in _read_store(store_path, "SELECT key, value FROM meeting") or []}
    except ValueError:
        return {}


def _check_existing_meeting(store_path: Path, args: argparse.Namespace) -> None:
    """Refuse to start over a meeting already in ``--out`` unless ``--overwrite`` (or, for live
    capture, ``--append``) says what to do with it.

    Raises:
        CliError: naming the way forward.
    """
    append = getattr(args, "append", None)
    if not store_path.exists() or not _committed_turns(store_path):
        return
    if not (append or args.overwrite):
        raise CliError(f"{store_path.parent} already holds a meeting ({store_path.name}); pass --overwrite to "
                       "replace it" + (", --append to go on with it" if append is not None else "") +
                       ", or choose another --out")
    if append:
        # export --refine re-clusters every turn from its kept windows: all sessions keep them, or none
        kept, keep = _has_embeddings(store_path), getattr(args, "keep_embeddings", None)
        if kept and not keep:
            way = ("add --keep-embeddings to keep this session's too, or" if keep is not None else
                   "this command keeps none (record this session in another --out), or")
            raise CliError(f"the meeting in {store_path.parent} kept its speakers' embeddings (for `voicekit export "
                           f"--refine`, and to know its speakers again as it goes on): {way} first "
                           f"`voicekit export {store_path.parent} --drop-embeddings`")
        if keep and not kept:
            raise CliError(f"the meeting in {store_path.parent} kept no speaker embeddings, so `voicekit export "
                           "--refine` could not re-cluster its earlier turns: go on with it without "
                           "--keep-embeddings, or record this session in another --out")


def _session_meta(store, meta: dict, start_time: float) -> dict:  # noqa: ANN001 - a MeetingStore
    """Record this capture session's metadata in the store and return the meeting's: ``started``
    stays the first session's, and ``sessions`` lists each session's source, wall-clock start and
    meeting time (``start_time``: 0 unless it goes on with a stored meeting)."""
    now = time.time()
    stored = store.meta() if start_time else {}
    sessions = stored.get("sessions")
    if sessions is None and stored:   # a meeting stored before sessions were listed, or a replay
        sessions = [{"source": stored.get("source"), "started": stored.get("started"), "start_time": 0.0}]
    session = {"source": meta.get("source"), "started": now, "start_time": start_time}
    meta = {**meta, "started": stored.get("started", now), "sessions": [*(sessions or []), session]}
    store.set_meta(**meta)
    return meta


def _known_speakers(pipe) -> str:  # noqa: ANN001 - a Pipeline
    """How a resumed meeting's speakers are known, for the line that says it goes on."""
    known = [s.label for s in getattr(pipe.diarizer, "speakers", ())]
    return (f"{', '.join(known)} known by voice from the stored embeddings" if known else
            "new speakers are labelled after the stored ones")


def _has_embeddings(store_path: Path) -> bool:
    """Whether an existing meeting store kept speaker embeddings (False for an unreadable one)."""
    return bool(_read_store(store_path, "SELECT 1 FROM embeddings LIMIT 1"))


def _meeting_files(store_path: Path) -> list[Path]:
    """The files of the meeting stored at ``store_path`` that exist: its store (with SQLite's
    ``-wal``/``-shm``), the outputs voicekit wrote from it (``<stem>.<ext>`` and
    ``<stem>.refined.<ext>`` of its stem, ``meeting`` when none is stored, as ``export`` names
    them) and the local session's default log; nothing else."""
    from voicekit.outputs import output_paths

    stem = _stored_meta(store_path).get("stem")
    paths = [*output_paths(store_path.parent, stem if isinstance(stem, str) and stem else "meeting"), store_path,
             Path(f"{store_path}-wal"), Path(f"{store_path}-shm"), store_path.parent / "session.jsonl"]
    return [path for path in paths if path.is_file()]


def _remove_meeting(store_path: Path) -> None:
    """Remove the meeting a new one replaces (:func:`_meeting_files`)."""
    for path in _meeting_files(store_path):
        path.unlink(missing_ok=True)


class _SetAside:
    """The meeting ``--overwrite`` replaces in a live command, moved into ``OUT/.voicekit-replaced/``
    until the new one has started (the room joined), then deleted; moved back when it never
    starts (a refused token, an unreachable server, Ctrl-C while joining), so a failed start
    loses nothing."""

    def __init__(self, store_path: Path) -> None:
        self.dir = store_path.parent / ".voicekit-replaced"
        self.moved: list[Path] = []
        files = _meeting_files(store_path)
        if files:
            self.dir.mkdir(exist_ok=True)
        for path in files:
            path.rename(self.dir / path.name)
            self.moved.append(path)

    def drop(self) -> None:
        """The new meeting started: delete the old one."""
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
        self.moved = []

    def restore(self) -> None:
        """The new meeting never started: put the old one back."""
        for path in self.moved:
            (self.dir / path.name).rename(path)
        self.moved = []
        if self.dir.is_dir() and not any(self.dir.iterdir()):
            self.dir.rmdir()


def _meeting_stem(store_path: Path, args: argparse.Namespace) -> str:
    """The output stem of a live capture: ``--stem``, else ``meeting``; with ``--append``, the
    stored meeting's (its outputs are rewritten, never a second set beside them).

    Raises:
        CliError: ``--append`` with a ``--stem`` other than the stored meeting's.
    """
    stem = _check_stem(args.stem)
    stored = _stored_meta(store_path).get("stem") if args.append and _committed_turns(store_path) else None
    if stored and stem is not None and stem != stored:
        raise CliError(f"the meeting in {store_path.parent} writes its outputs as {stored}.*: with --append, "
                       f"leave out --stem (or give --stem {stored})")
    return stem or stored or "meeting"


def _check_stem(stem: str | None) -> str | None:
    """``--stem`` as given (None: the default), once it is known to be a plain file name."""
    if stem is not None and (not stem.strip() or Path(stem).name != stem or stem in (".", "..")):
        raise CliError(f"--stem {stem!r} must be a file name without a folder (e.g. meeting); "
                       "the folder is --out")
    return stem


def _turns_summary(result, speed: bool = False) -> str:  # noqa: ANN001 - MeetingResult
    """``N turns, M speakers[, audio in time (RTF)][, median turn latency]`` (no latency without turns)."""
    lat = sorted(result.latencies)
    parts = [_plural(len(result.turns), "turn"), _plural(len({t.speaker for t in result.turns}), "speaker")]
    if speed:
        parts.append(f"{result.audio_seconds:.1f} s of audio in {result.processing_seconds:.1f} s "
                     f"(RTF {result.rtf:.3f})")
    if lat:
        parts.append(f"median turn latency {lat[len(lat) // 2]:.2f} s")
    return ", ".join(parts)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _check_writable(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".voicekit-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        a_file = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
        if a_file is not None:
            raise CliError(f"cannot write to the output directory {out}: {a_file} is a file, not a "
                           "directory; choose another --out") from exc
        raise CliError(f"cannot write to the output directory {out} ({exc.strerror}); "
                       "choose another --out") from exc


def _unmatched_names(named: set[str], store) -> str | None:  # noqa: ANN001 - MeetingStore
    """The warning for ``--speaker-names`` labels that no turn of the meeting carries, live or
    refined (when the store holds a refinement); None when every label matched."""
    if not named:
        return None
    speakers = {t.speaker for t in store.turns()}
    refined = store.has_refined()
    if refined:
        speakers |= {t.speaker for t in store.turns(refined=True)}
    unmatched = sorted(set(named) - speakers)
    if not unmatched:
        return None
    return (f"--speaker-names: {', '.join(unmatched)} matched no speaker of this meeting (its speakers"
            f"{', live and refined' if refined else ''}: {', '.join(sorted(speakers)) or 'none'}); "
            "the name is kept in the store and names that label if a later `voicekit export OUT "
            "--refine --num-speakers N` finds it")


def _refined_summary(store) -> str:  # noqa: ANN001 - MeetingStore
    """One line on a refinement: speakers found, live turns whose main speaker changed (a speaker
    with a persistent name is shown with it, as the outputs show it)."""
    live, refined = store.turns(), store.turns(refined=True)
    changed = store.changed_turns()
    names = store.speaker_names()

    def shown(label: str) -> str:
        return f"{label} ({names[label]})" if label in names else label

    return (f"refined: {_plural(len({t.speaker for t in refined}), 'speaker')} "
            f"(live: {len({t.speaker for t in live})}); {len(changed)} of {_plural(len(live), 'live turn')} "
            "changed main speaker" + (" (" + ", ".join(f"#{tid} {shown(a)} → {shown(b)}" for tid, a, b in changed[:6])
                                      + (" …" if len(changed) > 6 else "") + ")" if changed else "")
            + (f"; the .refined files hold {_plural(len(refined) - len(live), 'more turn')}: live turns "
               "whose words go to different speakers are split" if len(refined) > len(live) else ""))


def _refine_stored(store, num_speakers: int | None) -> None:  # noqa: ANN001 - MeetingStore
    """Re-cluster a finished meeting from the embeddings its store kept; record the refined labels
    beside the live ones."""
    from voicekit.diarization.encoder import WindowEmbeddings
    from voicekit.diarization.refine import refine_turns

    if num_speakers is not None and num_speakers < 1:
        raise CliError(f"--num-speakers must be at least 1, got {num_speakers}")
    kept = store.embeddings()
    if not kept:
        if store.has_refined():
            raise CliError("cannot re-cluster: this meeting's speaker embeddings were not kept (or were "
                           "dropped); its stored refinement is written by `voicekit export OUT --refine` "
                           "without --num-speakers")
        source = str(store.meta().get("source", ""))
        if source.startswith("livekit:"):
            how = "`voicekit livekit` keeps no speaker embeddings (it has no --keep-embeddings), so this meeting cannot be refined"
        elif source.startswith("mic:"):
            how = ("a microphone meeting keeps them only when it ran with `voicekit mic --keep-embeddings`; "
                   "this one cannot be refined")
        else:
            how = "replay the recording again with --refine, or with --keep-embeddings to refine it later here"
        raise CliError(f"this meeting has no refined labels and no speaker embeddings to refine from: {how}")
    store.set_refined(refine_turns(store.turns(), [WindowEmbeddings(*k) for k in kept], num_speakers))


def cmd_export(args: argparse.Namespace) -> int:
    from voicekit.outputs import REFINED_SUFFIX
    from voicekit.store import MeetingStore

    out = Path(args.dir)
    store_path = out / "meeting.sqlite"
    if not store_path.is_file():
        raise CliError(f"{store_path} not found: give the --out directory of a voicekit replay or mic meeting")
    if args.num_speakers is not None and not args.refine:
        raise CliError("--num-speakers applies to the re-clustering: add --refine")
    store = MeetingStore(store_path)
    meta = store.meta()
    stem = meta.get("stem", "meeting")
    # a meeting that went on after its refinement (mic --append) holds turns the refinement lacks;
    # it can be redone only from kept embeddings
    stale = store.unrefined_turns() if store.has_refined() else 0
    redo = bool(stale) and _has_embeddings(store_path)
    try:
        if args.refine and (args.num_speakers is not None or not store.has_refined() or redo):
            if redo:
                print(f"the stored refinement lacks the {_plural(stale, 'turn')} committed since: re-clustering "
                      "the whole meeting" + ("" if args.num_speakers else " (--num-speakers N sets the count)"))
            _refine_stored(store, args.num_speakers)
            print(_refined_summary(store))
        elif args.refine:
            print("using the refinement already stored" + (" (pass --num-speakers N to re-cluster from the "
                                                            "kept embeddings)" if store.embeddings() else ""))
        if args.drop_embeddings:
            print(f"deleted the speaker embeddings of {_plural(store.drop_embeddings(), 'utterance')}")
        written = _write_outputs(store.turns(), out, stem, meta)
        if store.has_refined():
            if stale and not (args.refine and redo):
                print(f"the stored refinement lacks the {_plural(stale, 'turn')} committed since it ran: "
                      f"{stem}{REFINED_SUFFIX}.* give them their live labels" +
                      (f" (`voicekit export {out} --refine` re-clusters the whole meeting)" if redo else
                       " (no speaker embeddings are kept to re-cluster the meeting)"))
            written += _write_outputs(store.turns(refined=True), out, stem, {**meta, "refined": True},
                                      suffix=REFINED_SUFFIX)
    finally:
        store.close()
    print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console

    from voicekit.evaluation import evaluate_file, format_table, load_index
    from voicekit.pipeline import Components

    err = Console(stderr=True, highlight=False)
    files = load_index(args.eval_dir)
    if args.files:
        unknown = set(args.files) - {f.file_id for f in files}
        if unknown:
            raise CliError(f"--files: unknown file id{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}; "
                           f"the ids in {Path(args.eval_dir) / 'index.tsv'}: {', '.join(f.file_id for f in files)}")
        files = [f for f in files if f.file_id in args.files]
    options = _options(args)
    components = Components.load(options)
    results = []
    for f in files:
        err.print(f"[dim]{f.file_id}…[/dim]")
        results.append(evaluate_file(f, components, options))
    print(format_table(results))
    print()
    print(machine_line())
    print(f"commit: {source_commit()}")
    return 0 if all(r.error is None for r in results) else 1


def source_commit() -> str:
    """The git commit of this checkout (``abc1234``, ``-dirty`` when tracked files differ), or
    ``unknown`` outside a git checkout: what a measurement is recorded against."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine_line() -> str:
    """One line naming the machine a measurement ran on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def cmd_voices(args: argparse.Namespace) -> int:
    """``voicekit voices list | delete NAME | delete --all | enrol NAME AUDIO``."""
    import datetime

    from voicekit.voiceprints import VoiceprintError

    path = _library_path(args)
    if args.action == "list":
        if not path.is_file():
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
            raise CliError("voices delete: give a NAME or --all")
        if not path.is_file():
            raise CliError(f"no voice library at {path}; nothing to delete")
        library = _voice_library(args)
        try:
            if args.all:
                n = library.delete_all()
                print(f"deleted {n} voice{'s' if n != 1 else ''} from {path}")
                return 0
            deleted = library.delete(args.name)
            if deleted is None:
                raise CliError(f"no voice named {args.name!r} in {path}; see voicekit voices list")
        finally:
            library.close()
        print(f"deleted the voice of {deleted} from {path}")
        return 0
    # enrol
    from voicekit.audio import SAMPLE_RATE, load_audio
    from voicekit.diarization.encoder import SpeakerEncoder
    from voicekit.voiceprints import MIN_ENROL_SECONDS, check_enrolment, embed_speech

    if args.start is not None and args.end is not None and args.end <= args.start:
        raise CliError(f"--end {args.end:g} is not after --start {args.start:g}: give the start and the end "
                       "of their speech in seconds")
    samples = load_audio(args.audio, channel=args.channel)
    lo = int(round((args.start or 0.0) * SAMPLE_RATE))
    hi = len(samples) if args.end is None else int(round(args.end * SAMPLE_RATE))
    if not 0 <= lo < hi <= len(samples):
        raise CliError(f"--start/--end must lie inside the recording (0 to {len(samples) / SAMPLE_RATE:.1f} s)")
    try:
        vector, seconds = embed_speech(samples[lo:hi], SpeakerEncoder(), vad=args.vad)
        check_enrolment(args.name, seconds, MIN_ENROL_SECONDS)   # before a library file is made
        library = _voice_library(args, create=True)
        try:
            voice = library.enrol(args.name, vector, seconds, min_seconds=MIN_ENROL_SECONDS)
        finally:
            library.close()
    except VoiceprintError as exc:
        raise CliError(str(exc)) from exc
    print(f"enrolled the voice of {voice.name} ({seconds:.1f} s of speech; {voice.seconds:.1f} s in all) in {path}")
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
directory; --library chooses another. See docs/voiceprints.md.
"""


def cmd_models(args: argparse.Namespace) -> int:
    from voicekit.models import MANIFEST, ModelError, model_path, verify

    bad = 0
    for name, entry in MANIFEST.items():
        print(f"{name}  ({entry['kind']}) from {entry['package']}")
        try:
            print(f"    {model_path(name)}")
            if args.verify:
                ok = verify(name)
                bad += not all(ok.values())
                print("    sha256 " + ("ok" if all(ok.values()) else
                                      "MISMATCH: " + ", ".join(f for f, good in ok.items() if not good)
                                      + f"; reinstall: {entry['install']}"))
        except ModelError as exc:
            print(f"    not available: {exc}")
    return 1 if bad else 0


# --- live capture: devices, mic, livekit (docs/capture.md) --------------------------------------

EPILOG_MIC = """\
examples:
  voicekit devices
  voicekit mic --out out/                       # the default input device
  voicekit mic --device pulse --out out/ --num-speakers 3
  voicekit mic --device 2 --out out/ --seconds 600
  voicekit mic --out out/ --session local             # what a live model session would be sent
  voicekit mic --out out/ --keep-embeddings           # then, after a crash or an unplugged device:
  voicekit mic --out out/ --keep-embeddings --append  # the meeting goes on: same clock, same voices

Ctrl-C (or SIGTERM) ends the meeting: capture stops, the audio already captured is processed,
the open utterance is committed and the outputs are written (a second Ctrl-C aborts the rest).
A device that stops delivering audio (unplugged, audio server gone) ends the meeting the
same way, with a message and exit code 1.
"""


def _fresh_store(out: Path, append: bool):
    """The meeting store in ``out``: the existing one with ``append``, else a new one in place of
    any meeting there (:func:`_remove_meeting`; :func:`_check_existing_meeting` ran first)."""
    from voicekit.store import MeetingStore

    store_path = out / "meeting.sqlite"
    if store_path.exists() and not append:
        _remove_meeting(store_path)
    return MeetingStore(store_path)


class _GracefulStop:
    """First SIGINT/SIGTERM calls ``stop``; the next SIGINT raises
    :class:`voicekit.pipeline.MeetingAborted` (the pipeline then commits nothing more)."""

    def __init__(self, stop) -> None:  # noqa: ANN001
        self.stop = stop
        self.requested = False

    def _handler(self, signum, frame) -> None:  # noqa: ANN001
        if self.requested and signum == signal.SIGINT:
            from voicekit.pipeline import MeetingAborted

            raise MeetingAborted
        self.requested = True
        self.stop()

    def __enter__(self) -> "_GracefulStop":
        self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        for s, h in self._old.items():
            signal.signal(s, h)


def cmd_devices(args: argparse.Namespace) -> int:
    from voicekit.capture.mic import list_input_devices

    devices = list_input_devices()
    if not devices:
        print("no audio input devices (is a microphone connected, or PulseAudio running?)", file=sys.stderr)
        return 1
    for d in devices:
        print(f"{'*' if d.default else ' '} {d.index:3d}  {d.name}  ({d.hostapi}, {d.channels} ch, "
              f"{d.sample_rate} Hz)")
    return 0


def cmd_mic(args: argparse.Namespace) -> int:
    from rich.console import Console

    from voicekit.capture.mic import MicSource
    from voicekit.outputs import format_line
    from voicekit.pipeline import Components, Pipeline

    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Path(args.out)
    _check_writable(out)
    if args.seconds is not None and args.seconds <= 0:
        raise CliError(f"--seconds must be positive, got {args.seconds}")
    _check_existing_meeting(out / "meeting.sqlite", args)   # before the device: a wrong option comes first
    stem = _meeting_stem(out / "meeting.sqlite", args)
    session = _make_session(args, out, echo=False)  # a missing API key stops here: nothing written, no device
    source = MicSource(args.input_device, duration=args.seconds, channels=args.channels)
    options = _options(args)
    hooks = _hooks(args, err)
    voices = _voice_identifier(args)
    err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    source.start()   # before the store too: a device that refuses the stream leaves no meeting (and
    # --overwrite keeps the old one); the blocks it delivers meanwhile wait in its queue
    store = _fresh_store(out, args.append)
    if hooks.names:
        store.set_speaker_names(hooks.names)
    # the broadcaster of --session joins ``live`` just before the capture is read
    on_turn, live = _live_sink(None if args.quiet else (lambda t: console.print(format_line(t), markup=False)))
    pipe = Pipeline(options, components, hooks=hooks, store=store, on_turn=on_turn, realtime_clock=True,
                    voices=voices, resume=args.append)
    meta = _session_meta(store, {"source": f"mic:{source.device.name}", "stem": stem,
                                 "sample_rate": source.sample_rate, "channels": source.channels,
                                 "model": args.model, "vad": args.vad}, pipe.start_time)
    if pipe.start_time:
        err.print(f"[dim]going on with the meeting in {out}/ at {pipe.start_time:.1f} s "
                  f"({_known_speakers(pipe)})[/dim]")
    elif args.append:
        err.print(f"[yellow]--append: {out}/ holds no meeting to go on with (no turn stored): a new meeting "
                  "starts[/yellow]")
    err.print(f"listening on {source.device.name!r} ({source.sample_rate} Hz, {source.channels} ch); "
              "Ctrl-C ends the meeting")
    result = None

    def announce() -> None:
        if source.first_callback.wait(30.0):
            err.print(f"[dim]audio flowing ({source.first_callback_at - source.started_at:.2f} s after "
                      "the stream started)[/dim]")

    threading.Thread(target=announce, name="voicekit-mic-announce", daemon=True).start()
    broadcaster = _start_session(args, session, out / "meeting.sqlite")   # --session (realtime)
    live.extend([broadcaster] if broadcaster is not None else [])
    try:
        with _GracefulStop(source.stop):
            result = pipe.run(source, channel="mic")
        heard = round(source.samples_16k / 16000, 3)
    except KeyboardInterrupt:   # the second Ctrl-C: what is still queued is not transcribed
        heard, note = _interrupt_note([pipe], "aborted")
        dropped = source.samples_16k / 16000 - heard
        err.print(f"[yellow]{note}" + (f"; the {dropped:.1f} s captured after it were not transcribed"
                                       if dropped >= 0.05 else "") + "; writing outputs[/yellow]")
    finally:
        store.set_speaker_names(pipe.speaker_names())
        hooks.close()
        session_missed, stopped = _close_session(broadcaster, args, err)
    duration = round(pipe.start_time + heard, 3)   # the meeting's, every session of it
    meta["sessions"][-1].update(duration=heard, input_overflows=source.input_overflows,
                                queue_overflows=source.feed.overflows)
    meta.update(duration=duration, **{k: sum(x.get(k, 0) for x in meta["sessions"])
                                      for k in ("input_overflows", "queue_overflows")})
    store.set_meta(**meta)
    written = _write_outputs(store.turns(), out, stem, meta)
    if store.has_refined():   # the meeting went on after a refinement; mic writes no refined files
        how = (f"`voicekit export {out} --refine` re-clusters the whole meeting and rewrites them"
               if options.keep_embeddings else f"no speaker embeddings are kept to re-cluster the meeting; "
               f"`voicekit export {out}` rewrites them with this session's turns under their live labels")
        err.print(f"[yellow]{stem}.refined.* lack this session's turns: {how}[/yellow]")
    store.close()
    _enrol_voices(args, [pipe], err)
    err.print(f"[dim]{source.report()}[/dim]")
    if result is not None:
        err.print(f"[dim]{'this session: ' if pipe.start_time else ''}{_turns_summary(result)}[/dim]")
    err.print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    _session_log_line(session, err, [broadcaster])
    if session_missed:
        err.print(_session_missed_line(args))
    if source.lost is not None:  # the watchdog ended the capture: say so, and fail the run
        err.print(f"[red]voicekit: error: {source.lost}; the meeting up to then is written (exit code 1)[/red]")
        return 1
    if result is None or stopped:
        return 130
    return 1 if session_missed else 0


EPILOG_LIVEKIT = """\
examples:
  voicekit livekit --url ws://localhost:7880 --api-key devkey --api-secret secret --room standup --out out/
  voicekit livekit --url wss://example.livekit.cloud --token "$BOT_TOKEN" --out out/
  voicekit livekit --url ws://localhost:7880 --room standup --room-mic conference-room --out out/

LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET are read when the options are not given.
One lane per participant audio track: a participant's turns carry their name (no diarization);
an unnamed participant reads "@<room>/<n>". A --room-mic identity (or a participant with the
attribute voicekit.room_mic=true) is diarized: "Speaker A", "Speaker B"… within its lane.
Ctrl-C ends: every lane's open utterance is committed and the outputs are written.
See docs/livekit.md for running against a real livekit-server.
"""


def cmd_livekit(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from voicekit.capture.livekit_bot import LiveKitBot, mint_token
    from voicekit.outputs import format_line
    from voicekit.pipeline import Components

    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    url = args.url or os.environ.get("LIVEKIT_URL")
    if not url:
        raise CliError("give --url (or LIVEKIT_URL), e.g. ws://localhost:7880")
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("ws", "wss", "http", "https") or not parsed.hostname:
        raise CliError(f"--url {url!r} is not a LiveKit server URL: give ws://HOST:PORT (a local "
                       "livekit-server: ws://localhost:7880) or wss://HOST (LiveKit Cloud)")
    if not getattr(args, "debug", False):
        # the SDK logs every failed attempt at ERROR (6-35 lines); voicekit's own lines say what
        # happened, --debug shows the SDK's
        logging.getLogger("livekit").setLevel(logging.CRITICAL)
    token = args.token
    if not token:
        token = mint_token(args.api_key or os.environ.get("LIVEKIT_API_KEY", ""),
                           args.api_secret or os.environ.get("LIVEKIT_API_SECRET", ""),
                           args.room or "", identity=args.identity, name=args.name)
    if args.seconds is not None and args.seconds <= 0:
        raise CliError(f"--seconds must be positive, got {args.seconds}")
    out = Path(args.out)
    _check_writable(out)
    args.stem = _meeting_stem(out / "meeting.sqlite", args)
    session = _make_session(args, out, echo=False)  # a missing API key stops here: nothing written, no model
    options = _options(args)
    hooks = _hooks(args, err)
    voices = _voice_list(args)
    _check_existing_meeting(out / "meeting.sqlite", args)
    err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    from voicekit.store import MeetingStore

    store_path = out / "meeting.sqlite"
    # --overwrite: the old meeting is set aside until the room is joined (a failed join keeps it)
    aside = _SetAside(store_path) if store_path.exists() and not args.append else None
    store = MeetingStore(store_path)
    meta = {"source": f"livekit:{url}", "stem": args.stem, "model": args.model, "vad": args.vad}
    # the broadcaster of --session joins ``live`` once the room is joined; on_turn runs on the lanes' threads
    on_turn, live = _live_sink(None if args.quiet else
                               (lambda t: console.print(f"{t.channel}  {format_line(t)}", markup=False)))
    closed: list[tuple[bool, bool]] = []   # the broadcaster's close: (missed, stopped)

    bot = LiveKitBot(url, token, options, components=components, store=store, hooks=hooks, on_turn=on_turn,
                     room_mics=args.room_mic or (), voices=voices, resume=args.append,
                     on_status=lambda message: err.print(message, style="dim", markup=False))

    async def main() -> bool:
        """Join, then wait for Ctrl-C, --seconds or a lost connection. False: stopped while joining."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        err.print(f"[dim]joining {url}…[/dim]")
        joining, stopping = asyncio.ensure_future(bot.connect()), asyncio.ensure_future(stop.wait())
        await asyncio.wait({joining, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not joining.done():   # Ctrl-C while the server has not answered yet
            joining.cancel()
            await asyncio.gather(joining, return_exceptions=True)
            return False
        joining.result()   # a refused token or an unreachable server raises CaptureError here
        if aside is not None:
            aside.drop()
        # (with --append, a failed join leaves the stored meeting as it was)
        meta.update(_session_meta(store, meta, bot.start_time))
        err.print(f"joined room {bot.room_name!r} at {url}; Ctrl-C ends the meeting"
                  + (f" (going on with the meeting in {out}/ at {bot.start_time:.1f} s)" if bot.start_time else ""))
        if args.append and not bot.start_time:
            err.print(f"[yellow]--append: {out}/ holds no meeting to go on with (no turn stored): a new meeting "
                      "starts[/yellow]")
        broadcaster = _start_session(args, session, store_path)   # --session (realtime)
        if broadcaster is not None:
            live.append(broadcaster)
        try:
            await bot.wait(stop, args.seconds)
        finally:
            err.print("[dim]leaving: committing every lane's open utterance…[/dim]")
            await bot.close()
        return True

    def finish() -> list[Path]:
        """Store the speakers' names and write the outputs from every committed turn."""
        names = {}
        for lane in bot.all_lanes():
            if lane.pipeline is not None and lane.room_mic:
                names.update(lane.pipeline.speaker_names())
        store.set_speaker_names({**names, **hooks.names})
        hooks.close()
        closed.extend(_close_session(broadcaster, args, err) for broadcaster in live)
        meta["duration"] = round(bot.meeting_time(), 3)   # the meeting's, every session of it
        store.set_meta(duration=meta["duration"])
        written = _write_outputs(store.turns(), out, args.stem, meta)
        store.close()
        return written

    try:
        joined = asyncio.run(main())
    except BaseException:
        if bot.room is None:   # never joined: nothing was recorded, leave no meeting behind
            hooks.close()
            _discard_unjoined(store, store_path, args.append, aside)
        else:
            finish()
        raise
    if not joined:
        hooks.close()
        _discard_unjoined(store, store_path, args.append, aside)
        err.print("[yellow]stopped before the room was joined: nothing was recorded[/yellow]")
        return 130
    written = finish()
    _enrol_voices(args, [lane.pipeline for lane in bot.all_lanes() if lane.room_mic], err)
    for lane in bot.all_lanes():
        state = f"failed: {lane.error}" if lane.error else "ok"
        err.print(f"[dim]{lane.channel} {lane.label} ({lane.identity}): {len(lane.turns)} turns, "
                  f"{lane.samples / 16000:.1f} s of audio, {lane.feed.overflows} blocks dropped, {state}[/dim]")
    err.print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    _session_log_line(session, err, live)
    missed = any(m for m, _ in closed)
    if missed:
        err.print(_session_missed_line(args))
    if bot.lost is not None:
        err.print(f"[red]voicekit: error: {bot.lost}; the meeting up to then is written (exit code 1)[/red]")
        return 1
    if any(stopped for _, stopped in closed):
        return 130
    return 1 if missed or any(lane.error for lane in bot.all_lanes()) else 0


def _discard_unjoined(store, store_path: Path, append: bool, aside: "_SetAside | None") -> None:  # noqa: ANN001
    """After a join that failed or was stopped: close the store; remove it when this run made it
    (not ``--append``) and it holds no turn, so no empty meeting is left; and put back the meeting
    ``--overwrite`` had set aside."""
    store.close()
    if not append and not _committed_turns(store_path):
        _remove_meeting(store_path)
    if aside is not None:
        aside.restore()


def _capture_parsers(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("devices", help="list audio input devices (for voicekit mic --device)",
                       description="List the audio input devices PortAudio sees: index, name, host API, "
                                   "channels and native sample rate; '*' marks the default. Give the index "
                                   "or (part of) the name to `voicekit mic --device`.")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("mic", help="transcribe the shared conference microphone live",
                       description="Capture a microphone at its native rate and run it through the "
                                   "pipeline: one line per speaker turn, live.",
                       epilog=EPILOG_MIC, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", dest="input_device", default=None, metavar="NAME|INDEX",
                   help="input device: index or (part of) its name from `voicekit devices` (default: "
                        "the default input)")
    p.add_argument("--out", default="out", help="meeting directory for the store and outputs (default out/)")
    p.add_argument("--stem", default=None, help="output file stem (default meeting; with --append, the "
                                                "stored meeting's)")
    p.add_argument("--seconds", type=float, default=None, help="stop by itself after this many seconds")
    p.add_argument("--channels", type=int, default=None,
                   help="input channels to open (default: the device's own count; virtual devices "
                        "advertising more than 8 are opened in stereo)")
    p.add_argument("--quiet", action="store_true", help="no live lines")
    _meeting_args(p)
    _keep_embeddings_arg(p)
    _hook_args(p)
    _voice_args(p)
    _session_args(p)
    _pipeline_args(p, device_flag="--compute-device")
    p.set_defaults(func=cmd_mic)

    p = sub.add_parser("livekit", help="a bot that transcribes a LiveKit room, one lane per participant",
                       description="Join a LiveKit room and transcribe every participant's audio track.",
                       epilog=EPILOG_LIVEKIT, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default=None, help="server URL, ws://host:7880 or wss://… (default $LIVEKIT_URL)")
    p.add_argument("--token", default=None, help="the bot's join token (else minted from the key and secret)")
    p.add_argument("--api-key", default=None, help="API key to mint a token (default $LIVEKIT_API_KEY)")
    p.add_argument("--api-secret", default=None, help="API secret to mint a token (default $LIVEKIT_API_SECRET)")
    p.add_argument("--room", default=None, help="room to join (when minting a token)")
    p.add_argument("--identity", default="voicekit-bot", help="the bot's identity (minted token; default voicekit-bot)")
    p.add_argument("--name", default="voicekit", help="the bot's display name in the room, when voicekit mints "
                                                     "the token (default: voicekit)")
    p.add_argument("--room-mic", action="append", metavar="IDENTITY",
                   help="a participant whose track is a shared room microphone: diarized (repeatable)")
    p.add_argument("--out", default="out", help="meeting directory for the store and outputs (default out/)")
    p.add_argument("--stem", default=None, help="output file stem (default meeting; with --append, the "
                                                "stored meeting's)")
    p.add_argument("--seconds", type=float, default=None, help="leave by itself after this many seconds")
    p.add_argument("--quiet", action="store_true", help="no live lines")
    _meeting_args(p)
    _hook_args(p, names_scope=" (room-microphone lanes)")
    _voice_args(p)
    _session_args(p)
    _pipeline_args(p)
    p.set_defaults(func=cmd_livekit)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voicekit", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("replay", help="replay a recording through the pipeline",
                       description="Replay a recorded meeting: one line per speaker turn as the "
                                   "recording plays through VAD, Whisper and diarization. Ctrl-C stops "
                                   "reading the recording and commits every utterance heard so far "
                                   "(outputs written, exit code 130); a second Ctrl-C aborts what is left.",
                       epilog=EPILOG_REPLAY, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("audio", help="WAV/FLAC/OGG/MP3/M4A, any sample rate, mono or multichannel")
    p.add_argument("--out", default="out", help="meeting directory for the store and outputs (default out/)")
    p.add_argument("--stem", default=None, help="output file stem (default: the recording's name)")
    p.add_argument("--quiet", action="store_true",
                   help="a progress bar instead of live lines (--session local then only writes its log)")
    p.add_argument("--realtime", action="store_true", help="pace the replay at 1x, exactly as live capture")
    p.add_argument("--refine", action="store_true",
                   help="re-cluster the whole meeting afterwards and also write <stem>.refined.*")
    p.add_argument("--channel", type=int, default=None, help="use this channel (0-based) instead of the downmix")
    p.add_argument("--per-channel", action="store_true",
                   help="one person per channel (a call recorded in stereo, a mixer's multitrack): each "
                        "channel is a speaker (channel 0 = Speaker A, 1 = Speaker B…), no diarization")
    g = p.add_argument_group("headerless PCM (.raw, .pcm)")
    g.add_argument("--raw-rate", type=int, default=None, metavar="HZ",
                   help="read AUDIO as headerless PCM at this sample rate")
    g.add_argument("--raw-format", default="s16le", choices=["s16le", "s24le", "s32le", "f32le", "u8"],
                   help="sample format of headerless PCM (default s16le)")
    g.add_argument("--raw-channels", type=int, default=1, help="interleaved channels of headerless PCM (default 1)")
    _meeting_args(p, append=False)  # a replay is never resumed: per-channel mode covers several channels
    _keep_embeddings_arg(p)
    _hook_args(p, decisions=True)
    _voice_args(p)
    g = p.add_argument_group("turn-taking")
    g.add_argument("--members", default=None, metavar="MEMBERS.yaml",
                   help="AI members of the meeting: run the turn-taking ladder on every turn "
                        "(see docs/turn-taking.md; no model is called)")
    g.add_argument("--explain", action="store_true",
                   help="print each turn with its turn-taking decision and rung (needs --members)")
    _pipeline_args(p)
    _session_args(p)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("export", help="rewrite the outputs from a meeting store",
                       description="Rewrite OUT/<stem>.{json,rttm,srt,vtt,txt} (and <stem>.refined.* where a "
                                   "refinement is stored) from OUT/meeting.sqlite: after a crash, a Ctrl-C, or to "
                                   "refine a meeting later. Re-clustering needs the speaker embeddings, which "
                                   "only --keep-embeddings keeps (`replay --refine` alone does not).")
    p.add_argument("dir", metavar="OUT", help="the --out directory of a replay or a mic meeting")
    p.add_argument("--refine", action="store_true",
                   help="write <stem>.refined.*: re-cluster from the embeddings kept with --keep-embeddings "
                        "when the meeting has no refinement yet or --num-speakers is given, else use the "
                        "refinement stored (live labels are never changed); without --refine, "
                        "<stem>.refined.* are rewritten only where a refinement is stored")
    p.add_argument("--num-speakers", type=int, default=None,
                   help="with --refine: re-cluster into exactly this many speakers (needs the kept embeddings)")
    p.add_argument("--drop-embeddings", action="store_true",
                   help="delete the speaker embeddings kept with --keep-embeddings (after any --refine)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("eval", help="DER / WER / RTF on the evaluation recordings",
                       description="Run the pipeline on every recording with a reference and print "
                                   "DER (collar 0 and 0.5), speakers found, WER and RTF.")
    p.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "eval"),
                   help="folder with index.tsv (default ../shared/eval)")
    p.add_argument("--files", nargs="*", help="only these file ids")
    _pipeline_args(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("models", help="list the models, where they come from, and check their checksums",
                       description="List every model voicekit can use (Whisper tiny.en and base, the speaker "
                                   "encoder, Silero VAD), the PyPI package each comes from, where it lies on "
                                   "this machine; with --verify, whether its files match the recorded sha256 "
                                   "checksums (exit code 1 if one does not).")
    p.add_argument("--verify", action="store_true", help="check sha256 of the packaged weights")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("voices", help="known voices: list, delete or enrol voiceprints (opt-in)",
                       description="The voice library: voiceprints that name speakers in later "
                                   "meetings (--voices). Biometric data: see docs/voiceprints.md.",
                       epilog=EPILOG_VOICES, formatter_class=argparse.RawDescriptionHelpFormatter)
    vsub = p.add_subparsers(dest="action", required=True)
    for name, help_text in (("list", "list the enrolled voices"), ("delete", "delete a voice (or --all)"),
                            ("enrol", "enrol a voice from a recording of that person")):
        q = vsub.add_parser(name, help=help_text)
        q.add_argument("--library", dest="voices", default=None, metavar="PATH",
                       help="the voice library file (default $VOICEKIT_VOICES, else voices.sqlite in "
                            "the user data directory)")
        if name == "delete":
            q.add_argument("name", nargs="?", default=None, help="the person's name")
            q.add_argument("--all", action="store_true", help="delete every voice")
        elif name == "enrol":
            q.add_argument("name", help="the person's name")
            q.add_argument("audio", help="a recording in which only this person speaks (or use --start/--end)")
            q.add_argument("--start", type=float, default=None, help="start of their speech (seconds)")
            q.add_argument("--end", type=float, default=None, help="end of their speech (seconds)")
            q.add_argument("--channel", type=int, default=None, help="use this channel (0-based)")
            q.add_argument("--vad", default="silero", help="silero (default) or webrtc")
    p.set_defaults(func=cmd_voices)

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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``voicekit`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out).absolute() if isinstance(getattr(args, "out", None), str) else None
    made = [d for d in ([out, *out.parents] if out is not None else []) if not d.exists()]
    code = 1
    try:
        code = _dispatch(args)
        return code
    finally:
        if code != 0:  # a command that failed before writing anything leaves no empty --out
            for d in made:  # --out first, then the parents it created
                if d.is_dir() and not any(d.iterdir()):
                    d.rmdir()


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command; every expected error becomes one line on stderr and an exit code."""
    from voicekit.audio import AudioError
    from voicekit.capture import CaptureError
    from voicekit.devices import DeviceError
    from voicekit.hooks import HookError
    from voicekit.models import ModelError
    from voicekit.outputs import OutputError
    from voicekit.store import StoreError
    from voicekit.voiceprints import VoiceprintError

    try:
        return args.func(args)
    except (CliError, AudioError, ModelError, StoreError, HookError, CaptureError, OutputError,
            VoiceprintError, DeviceError) as exc:
        if args.debug:
            raise
        print(f"voicekit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside a meeting's own handling (loading models, eval…)
        if args.debug:
            raise
        print("voicekit: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file or directory the command needed
        if args.debug:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"voicekit: error: {exc.strerror or exc}{where}; check the path and free space "
              "(--debug shows where)", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - never a traceback without --debug
        if args.debug:
            raise
        print(f"voicekit: internal error: {type(exc).__name__}: {exc}; rerun with --debug for the "
              "traceback and report it", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
