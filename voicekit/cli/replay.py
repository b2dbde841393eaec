"""``voicekit replay``: a recording through the pipeline, live lines, the outputs; with
``--members``, the turn-taking ladder on every turn (:mod:`voicekit.cli.decisions`)."""

from __future__ import annotations

import argparse
import logging
import math
import time
from pathlib import Path

from voicekit.cli.common import (CliError, _chain, _check_writable, _GracefulStop, _plural,
                                 _ReaderWatch, HelpFormatter, meeting_dir, warn)
from voicekit.cli.decisions import _check_explain, _turn_taking, _turn_taking_summary, _with_decisions
from voicekit.cli.meeting import (_check_existing_meeting, _check_stem, _replacing,
                                  _interrupt_note, _refined_summary, _hints, _store_failed, _turns_summary,
                                  _take_meeting_dir, _unmatched_names, _write_outputs, _wrote_line)
from voicekit.cli.options import (_diarizer_meta, _diarizer_name, _hook_args, _hooks, _keep_embeddings_arg, _meeting_args,
                                  _options, _pipeline_args, _session_args, _turntaking_args, _voice_args)
from voicekit.cli.session import (_close_session, _make_session, _session_log_line, _session_missed_line,
                                  _start_session)
from voicekit.cli.voices import ENROL_FAILED, _enrol_voices, _report_voice_matches, _voice_identifier


EPILOG_REPLAY = """\
examples (examples/ is the folder of that name in the voicekit checkout):
  voicekit replay meeting.wav                              # outputs in out/meeting/
  voicekit replay call.mp3 --out out/ --speaker-names "Speaker A=Diane,Speaker B=Sheila"
  voicekit replay meeting.flac --out out/ --quiet --refine --num-speakers 3
  voicekit replay meeting.wav --out out/ --realtime        # paced at 1x, as live capture
  voicekit replay meeting.wav --out out/ --hook examples/rename.py
  voicekit replay meeting.wav --out out/ --members examples/members.yaml --explain

outputs in OUT: <stem>.json (turns with words, times in seconds, speaker, confidence),
<stem>.rttm, <stem>.srt, <stem>.vtt, <stem>.txt, and meeting.sqlite (the store every output is
rebuilt from with `voicekit export OUT`). With --refine also <stem>.refined.*.

With --members, every committed turn goes through the turn-taking ladder (docs/turn-taking.md)
under its speaker's attribution label (the speaker name after renames, ranked against look-alike
names); no model is called: a dry run in which each chosen member counts as having answered.
--explain prints each turn with its decision and rung, and a count per rung at the end.

stdout carries only the live lines and --explain's decisions (--quiet: no live lines, but --explain
still prints each turn with its decision); the rest goes to stderr. exit codes: 0 done; 1 a
truncated recording (transcribed as far as it goes), a --session that missed turns or had one
rejected, or an --enrol-voices that did not enrol every named speaker (or found none named); 2 a
bad argument, an unreadable recording, a full disk (one `voicekit: error:` line); 130 / 143
stopped by Ctrl-C / SIGTERM; 141 the reader of stdout went away (`| head -1`). After 1,
130, 141 and 143, and after a 2 for a stdout that cannot be written (`> /dev/full`), the outputs
hold what was heard.
"""


def cmd_replay(args: argparse.Namespace) -> int:
    _check_explain(args)   # a flag error before the recording's
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
    if args.per_channel and args.realtime:   # a streaming review: an internal error (ValueError) before
        raise CliError("--realtime paces one stream as a microphone gives it, and --per-channel replays every "
                       "channel on its own, unpaced: drop --realtime (or --per-channel to replay the downmix "
                       "at 1x)")
    if args.per_channel and (args.voices is not None or args.enrol_voices):
        raise CliError("--voices/--enrol-voices name diarized speakers, but with --per-channel each channel "
                       "is a speaker: drop --voices/--enrol-voices")
    if args.per_channel and (args.refine or args.keep_embeddings):
        flag, does = ("--refine", "re-clusters") if args.refine else ("--keep-embeddings", "keeps what re-clusters")
        raise CliError(f"{flag} {does} speakers, but with --per-channel each channel is a speaker: drop {flag}")
    counts = [flag for flag, value in (("--num-speakers", args.num_speakers), ("--min-speakers", args.min_speakers),
                                       ("--max-speakers", args.max_speakers)) if value is not None]
    if args.per_channel and counts:
        raise CliError(f"{'/'.join(counts)} tell{'s' if len(counts) == 1 else ''} the diarizer how many speakers "
                       f"to find, but with --per-channel each channel is a speaker: drop {'/'.join(counts)}")
    if args.raw_rate is not None and args.raw_rate <= 0:
        raise CliError(f"--raw-rate must be the sample rate in Hz, a positive number, got {args.raw_rate}")
    shapes = [flag for flag, value in (("--raw-format", args.raw_format), ("--raw-channels", args.raw_channels))
              if value is not None]
    if args.raw_rate is None and shapes:   # it was ignored without a word (a WAV read by its header)
        given = "/".join(shapes)
        raise CliError(f"{given} describe{'s' if len(shapes) == 1 else ''} headerless PCM and appl"
                       f"{'ies' if len(shapes) == 1 else 'y'} only with --raw-rate: add --raw-rate HZ for a "
                       f".raw/.pcm file, or drop {given} (a WAV, FLAC or MP3 gives its format in its header)")
    raw = (RawPcm(args.raw_rate, args.raw_format or "s16le", 1 if args.raw_channels is None else args.raw_channels)
           if args.raw_rate else None)
    source = FileSource(args.audio, realtime=args.realtime, channel=args.channel, per_channel=args.per_channel,
                        raw=raw)
    if args.per_channel and source.info.channels == 1:
        raise CliError(f"{source.path} has one channel: --per-channel makes each channel a speaker, so the whole "
                       "recording would be one speaker; drop --per-channel to diarize it")
    if args.per_channel:
        from voicekit.audio import same_channels

        same = same_channels(source.path, raw=raw)
        if same:
            pairs = ", ".join(f"{a} and {b} ({100 * d:.1f} %)" for a, b, d in same)
            raise CliError(f"channels {pairs} of {source.path} carry the same audio (they differ by that share "
                           "of their level over the first 30 s): it is not one person per channel, and every "
                           "turn would come out once per channel; drop --per-channel to diarize it")
    out = Path(args.out)
    _check_writable(out)
    _take_meeting_dir(out)  # until the command returns: a second command into this --out is refused
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
    pipe = None  # the pipeline (below), whose matched voices are the registered participants
    decide = _turn_taking(args, hooks, lambda: pipe.participants() if pipe is not None else ())
    session = _make_session(args, out)  # a missing API key stops here: nothing written, no model loaded
    store_path = out / "meeting.sqlite"
    _check_existing_meeting(store_path, args, stem)
    if not args.quiet:
        err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    diarizer = None
    if options.pyannote is not None and options.pyannote.mode == "offline":
        import numpy as np

        from voicekit.diarization.pyannote_backend import PyannoteOfflineDiarizer
        from voicekit.sources import FileSource

        t = time.monotonic()
        d = options.diarizer
        # decoded as the pipeline decodes it: a file that breaks off mid-stream gives the audio
        # before the break (loading it whole raised, and the replay lost the whole recording)
        audio = np.concatenate([np.zeros(0, np.float32),
                                *FileSource(source.path, channel=args.channel, raw=raw)])
        segments = components.pyannote.diarize(audio, d.num_speakers, d.min_speakers, d.max_speakers)
        diarizer = PyannoteOfflineDiarizer(segments)
        err.print(f"[dim]pyannote diarized the whole recording in {time.monotonic() - t:.1f} s: "
                  f"{_plural(len({s.label for s in segments}), 'speaker')}, "
                  f"{_plural(len(segments), 'speaker turn')}[/dim]")
    with _replacing(store_path) as store:   # a run that fails before its first turn puts the old one back
        meta = {"source": str(source.path), "stem": stem, "duration": round(source.info.duration, 3),
                "sample_rate": source.info.sample_rate, "channels": source.info.channels,
                "model": args.model, "vad": args.vad}
        meta.update(_diarizer_meta(options))
        if args.per_channel:
            meta["diarizer"] = "per-channel"   # a speaker per channel, none diarized (nothing to refine)
        # the stored duration is known when the replay ends; one killed before leaves None, which
        # `voicekit export` reads as a meeting that did not end
        store.set_meta(**{**meta, "duration": None})
        if hooks.names:
            store.set_speaker_names(hooks.names)
        pipeline_kw = {}
        if args.quiet:
            # the time left from the speed over the last 10 minutes (rich's 30 s swung 5 ↔ 37 min on
            # a 74 min recording, a trial), the audio heard as a clock
            progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                TextColumn("{task.fields[heard]} of {task.fields[length]}"), TimeRemainingColumn(),
                                console=err, transient=True, disable=not _bar(err),  # no bar in a log
                                speed_estimate_period=600.0)
            progress.start()
            total = max(source.info.duration, 0.01)
            task = progress.add_task(stem, total=total, heard=_hms(0.0), length=_hms(total))
            pipeline_kw["progress"] = _progress_updater(progress, task, total, err)
            on_turn = None
        else:
            progress = None
            on_turn = lambda t: console.print(format_line(t), markup=False)  # noqa: E731
        on_turn = _with_decisions(on_turn, decide, args)
        broadcaster = _start_session(args, session, store_path)              # --session (realtime)
        if broadcaster is not None:
            on_turn = _chain(on_turn, broadcaster.on_turn)
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
                with _GracefulStop(stop) as graceful, _ReaderWatch(graceful.stdout_failed) as watch:
                    if pipe is not None:
                        result = pipe.run(source, progress=pipeline_kw.get("progress"), refine=False)
                    else:
                        result = run_per_channel(source, source.info.channels, options, components, hooks=hooks,
                                                 store=store, on_turn=on_turn, progress=pipeline_kw.get("progress"),
                                                 realtime_clock=args.realtime, pipes=pipes)
            except KeyboardInterrupt:  # the second Ctrl-C
                result = None
            interrupted = graceful.requested or result is None
            if source.truncated is not None and not interrupted:
                meta["duration"] = round(source.truncated.held, 3)   # what the file held, not its header's length
            if interrupted:
                meta["duration"], note = _interrupt_note(pipes, "interrupted")
                err.print(f"[yellow]{note}{_not_heard(source, meta['duration'])}; writing outputs[/yellow]")
        except StoreError as exc:   # an old meeting --overwrite set aside is put back when no turn was committed
            raise _store_failed(exc, store_path, "run the replay again") from exc
        finally:
            if progress is not None:
                progress.stop()
            try:
                if result is None and not interrupted:   # a stage or the recording failed: what was heard
                    meta["duration"] = _interrupt_note(pipes, "failed")[0]
                store.set_meta(duration=meta["duration"])   # interrupted: what was heard, not the file's length
                store.set_speaker_names(pipe.speaker_names() if pipe is not None else hooks.names)
            except StoreError as exc:
                logging.getLogger("voicekit.cli").warning("%s", exc)
            hooks.close()
            session_missed, stopped = _close_session(broadcaster, args, err)
            interrupted = interrupted or stopped
    try:
        written = _write_outputs(store.turns(), out, stem, meta, store=store)
        refined_line = None
        later = (f"refine later with `voicekit export {out} --refine`" if options.keep_embeddings else
                 f"run the replay again with --refine, or with --keep-embeddings to refine later with "
                 f"`voicekit export {out} --refine`")
        if args.refine and interrupted:
            warn(err, f"the replay was interrupted: no refined outputs ({later})")
        elif args.refine:
            try:
                pipe.refine()
            except KeyboardInterrupt:
                interrupted = True
                warn(err, f"refinement interrupted: the live outputs are written; no refined ones "
                          f"({later})")
            else:
                written += _write_outputs(store.turns(refined=True), out, stem, {**meta, "refined": True},
                                          suffix=REFINED_SUFFIX, store=store)
                refined_line = _refined_summary(store)
        unmatched = _unmatched_names(named, store)
    finally:
        store.close()
    _report_voice_matches([pipe], err, out)
    enrolled = _enrol_voices(args, [pipe], err)
    if result is not None:
        err.print(f"[dim]{_turns_summary(result, speed=not args.realtime)}"
                  + (f", {result.blocked} blocked by hooks" if result.blocked else "")
                  + (f", {_plural(len(hooks.failures), 'hook failure')}" if hooks.failures else "") + "[/dim]")
    if refined_line:
        err.print(f"[dim]{refined_line}[/dim]")
    for hint in _hints(result, options, components.transcriber.english_only) if result is not None else ():
        warn(err, hint)
    cancelled = _cancelling_downmix(source, args) if result is not None and result.speech_seconds <= 0 else None
    if cancelled:
        warn(err, cancelled)
    if unmatched and result is not None:
        warn(err, unmatched)
    _turn_taking_summary(decide, args, err)
    err.print(_wrote_line(written, out))
    _session_log_line(session, err)
    if interrupted:   # 130 after Ctrl-C, 143 after SIGTERM, 141 or 2 when stdout failed
        return watch.exit_code if watch.gone else graceful.exit_code
    if session_missed:
        err.print(_session_missed_line(args, [broadcaster]))
        return 1
    cut = source.truncated
    if cut is not None:
        why = f" (the decoder stopped: {cut.reason})" if cut.reason else ""
        err.print(f"{source.path} is truncated{why}: only its first {cut.held:.1f} s of {cut.declared:.1f} s "
                  "were transcribed (exit code 1)")
        return 1
    if not enrolled:
        warn(err, ENROL_FAILED)
        return 1
    return 0


def _cancelling_downmix(source, args: argparse.Namespace) -> str | None:  # noqa: ANN001 - FileSource
    """The hint for a multichannel recording whose mono downmix cancels (one channel phase-inverted:
    the VAD hears silence), or None."""
    from voicekit.audio import CANCELLING_DOWNMIX, AudioError, downmix_level

    if source.info.channels < 2 or args.channel is not None or args.per_channel:
        return None
    try:
        level = downmix_level(source.path, source.raw)
    except AudioError:
        return None
    if level is None or level >= CANCELLING_DOWNMIX:
        return None
    below = -20 * math.log10(max(level, 1e-6))
    return (f"the {source.info.channels} channels cancel when mixed to mono (the mix is {below:.0f} dB below them: "
            "one is phase-inverted), so the VAD heard silence: replay with --channel 0 to read one channel")


def _default_out(args: argparse.Namespace) -> str:
    """``--out`` when none is given: ``out/NAME``, NAME the recording's file name without its
    extension, so that replays of two recordings never meet in one folder (``out``)."""
    return str(Path("out", Path(args.audio).stem)) if Path(args.audio).stem else "out"


LOG_PROGRESS_EVERY = 300.0
"""Seconds of audio between the progress lines of ``replay --quiet`` when stderr is no terminal."""


def _progress_updater(progress, task, total: float, err):  # noqa: ANN001, ANN202 - rich objects
    """``replay --quiet``'s progress callback (seconds of audio heard): the bar on a terminal;
    in a log (nohup, cron, a file) or on a ``TERM=dumb`` terminal, where the bar is off, one line every
    :data:`LOG_PROGRESS_EVERY` seconds of audio (a trial's 74 min replay printed nothing for 6
    minutes): ``heard 0:05:00 of 1:13:37 (7%) in 0:00:41, about 0:09:20 left``."""
    t0, next_line, bar = time.monotonic(), [LOG_PROGRESS_EVERY], _bar(err)

    def update(seconds: float) -> None:
        progress.update(task, completed=seconds, heard=_hms(seconds))
        if bar or seconds < next_line[0] or seconds >= total:
            return
        next_line[0] += LOG_PROGRESS_EVERY
        took = time.monotonic() - t0
        err.print(f"heard {_hms(seconds)} of {_hms(total)} ({seconds / total:.0%}) in {_hms(took)}, about "
                  f"{_hms(took / seconds * (total - seconds))} left", markup=False, highlight=False)

    return update


def _bar(err) -> bool:  # noqa: ANN001 - a rich Console
    """True when ``replay --quiet`` draws its progress bar on ``err``: a terminal, and not a
    ``TERM=dumb`` one (a screen reader's plain text mode, an editor's shell), where a bar redrawn
    ten times a second reads as noise; there the log's progress lines are printed instead."""
    return err.is_terminal and not err.is_dumb_terminal


def _hms(seconds: float) -> str:
    """``1:13:37``: whole seconds as hours, minutes and seconds."""
    import datetime

    return str(datetime.timedelta(seconds=round(seconds)))


def _not_heard(source, heard: float) -> str:  # noqa: ANN001 - a FileSource
    """What an interrupted replay left of its recording, and that only a new replay hears it (a
    long-recordings trial could not tell from the outputs how much was missing)."""
    from voicekit.outputs import clock

    total = source.info.duration
    if total - heard < 0.5:
        return ""
    return (f"; the last {clock(total - heard, digits=1)} of the recording's {clock(total, digits=1)} were not "
            "heard (a replay is not resumed: run it again with --overwrite to hear it all)")


def _replay_parser(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("replay", help="replay a recording through the pipeline",
                       description="Replay a recorded meeting: one line per speaker turn as the "
                                   "recording plays through VAD, Whisper and diarization, labelled "
                                   "\"Speaker A\", \"Speaker B\"… in the order the voices are first "
                                   "heard (a label, once printed, never changes). Ctrl-C stops "
                                   "reading the recording and commits every utterance heard so far "
                                   "(outputs written, exit code 130; 143 when SIGTERM stops it); a second "
                                   "Ctrl-C aborts what is left.",
                       epilog=EPILOG_REPLAY, formatter_class=HelpFormatter)
    p.add_argument("audio", help="WAV/FLAC/OGG/MP3/M4A, any sample rate, mono or multichannel")
    p.add_argument("--out", default=None, type=meeting_dir,
                   help="meeting directory for the store and outputs (default out/NAME/, NAME the "
                        "recording's file name without its extension: each recording a folder of its own)")
    p.add_argument("--stem", default=None, help="output file stem (default: the recording's name)")
    p.add_argument("--quiet", action="store_true",
                   help="a progress bar instead of live lines (in a log, where stderr is no terminal, "
                        "and on a TERM=dumb terminal: a line every 5 minutes of audio; --session local "
                        "then only writes its log; "
                        "--explain still prints each turn with its decision)")
    p.add_argument("--realtime", action="store_true", help="pace the replay at 1x, exactly as live capture")
    p.add_argument("--refine", action="store_true",
                   help="re-cluster the whole meeting afterwards and also write <stem>.refined.*: at most 8 "
                        "speakers, unless --max-speakers N or --num-speakers N is given")
    p.add_argument("--channel", type=int, default=None, help="use this channel (0-based) instead of the downmix")
    p.add_argument("--per-channel", action="store_true",
                   help="one person per channel (a call recorded in stereo, a mixer's multitrack): each "
                        "channel is a speaker (channel 0 = Speaker A, 1 = Speaker B…), no diarization; "
                        "unpaced (not with --realtime)")
    g = p.add_argument_group("headerless PCM (.raw, .pcm)")
    g.add_argument("--raw-rate", type=int, default=None, metavar="HZ",
                   help="read AUDIO as headerless PCM at this sample rate")
    # (defaults None: given without --raw-rate, they are refused rather than ignored)
    g.add_argument("--raw-format", default=None, choices=["s16le", "s24le", "s32le", "f32le", "u8"],
                   help="sample format of headerless PCM (default s16le; only with --raw-rate)")
    g.add_argument("--raw-channels", type=int, default=None,
                   help="interleaved channels of headerless PCM (default 1; only with --raw-rate)")
    _meeting_args(p, append=False)  # a replay is never resumed: per-channel mode covers several channels
    _keep_embeddings_arg(p)
    _hook_args(p)
    _voice_args(p)
    _turntaking_args(p)
    _pipeline_args(p)
    _session_args(p)
    p.set_defaults(func=cmd_replay, default_out=_default_out)
