"""Live capture (docs/capture.md): ``voicekit devices``, ``voicekit mic`` (the shared conference
microphone) and ``voicekit livekit`` (a LiveKit room bot, one lane per participant)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import urllib.parse
from pathlib import Path

from voicekit.cli.common import (CliError, _check_writable, _GracefulStop, _plural, _ReaderWatch,
                                 finite_float, HelpFormatter, meeting_dir, warn)
from voicekit.cli.decisions import _turn_taking, _turn_taking_summary, _with_decisions
from voicekit.cli.meeting import (_check_existing_meeting, _committed_turns, _discard_unjoined, _interrupt_note,
                                  _replacing, _known_speakers, _meeting_stem, _session_meta, _SetAside, _hints,
                                  _store_failed, _take_meeting_dir, _turns_summary, _write_outputs, _wrote_line)
from voicekit.cli.options import (_diarizer_meta, _diarizer_name, _hook_args, _hooks, _keep_embeddings_arg, _meeting_args,
                                  _options, _pipeline_args, _session_args, _turntaking_args, _voice_args)
from voicekit.cli.session import (_close_session, _live_sink, _make_session, _session_log_line,
                                  _session_missed_line, _start_session)
from voicekit.cli.voices import (ENROL_FAILED, _enrol_voices, _report_voice_matches, _voice_identifier,
                                 _voice_list)


EPILOG_MIC = """\
examples:
  voicekit devices
  voicekit mic --out out/                       # the default input device
  voicekit mic --device pulse --out out/ --num-speakers 3
  voicekit mic --device 2 --out out/ --seconds 600
  voicekit mic --out out/ --session local             # what a live model session would be sent
  voicekit mic --out out/ --members examples/members.yaml --explain   # which AI member answers each turn
  voicekit mic --out out/ --keep-embeddings           # then, after a crash or an unplugged device:
  voicekit mic --out out/ --keep-embeddings --append  # the meeting goes on: same clock, same voices

Ctrl-C (or SIGTERM) ends the meeting: capture stops, the audio already captured is processed,
the open utterance is committed and the outputs are written (a second Ctrl-C aborts the rest).
A device that stops delivering audio (unplugged, audio server gone) ends the meeting the
same way, with a message and exit code 1.

As a service: stdout carries only the live lines (none with --quiet), stderr one line per event.
exit codes: 0 ended (Ctrl-C, SIGTERM, --seconds); 1 the device stopped delivering, a --session
that missed turns or had one rejected, or an --enrol-voices that did not enrol every named
speaker (or found none named); 2 a bad argument, no input device
(also while the audio server is down), a full disk (one `voicekit: error:` line); 130 aborted by
a second Ctrl-C; 141 the reader of stdout went away. SIGHUP and SIGKILL end it at once: the
turns committed are kept in OUT/meeting.sqlite, and `--append` (which also starts a new meeting
in an empty OUT) goes on with it, or `voicekit export OUT` writes its outputs.
"""


def cmd_devices(args: argparse.Namespace) -> int:
    from voicekit.capture.mic import require_input_devices

    for d in require_input_devices():
        print(f"{'*' if d.default else ' '} {d.index:3d}  {d.name}  ({d.hostapi}, {d.channels} ch, "
              f"{d.sample_rate} Hz)")
    return 0


class _LostBeforeFirstTurn(Exception):
    """The device stopped delivering before the meeting that replaces one (``--overwrite``)
    committed a turn: raised in :func:`_replacing`'s block, which puts the old meeting back."""


class _Caught:
    """A context manager that stops an exception of ``kind`` and keeps it (``caught``)."""

    def __init__(self, kind: type[BaseException]) -> None:
        self.kind, self.caught = kind, None

    def __enter__(self) -> "_Caught":
        return self

    def __exit__(self, kind, exc, tb) -> bool:  # noqa: ANN001
        if isinstance(exc, self.kind):
            self.caught = exc
            return True
        return False


def cmd_mic(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from voicekit.capture.mic import MicSource
    from voicekit.outputs import format_line
    from voicekit.pipeline import Components, Pipeline
    from voicekit.store import StoreError

    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Path(args.out)
    _check_writable(out)
    _take_meeting_dir(out)  # until the command returns: a second command into this --out is refused
    if args.seconds is not None and args.seconds <= 0:
        raise CliError(f"--seconds must be positive, got {args.seconds:g}")
    if args.input_device is not None and not args.input_device.strip():   # an unset $MIC: not the default
        raise CliError("--device is empty: give a microphone's name or index (`voicekit devices` lists them), "
                       "or leave --device out for the default microphone")
    stem = _meeting_stem(out / "meeting.sqlite", args)
    _check_existing_meeting(out / "meeting.sqlite", args, stem)   # before the device: a wrong option comes first
    session = _make_session(args, out, echo=False)  # a missing API key stops here: nothing written, no device
    hooks = _hooks(args, err)
    pipe = None   # the pipeline (below), whose matched voices are the registered participants
    decide = _turn_taking(args, hooks, lambda: pipe.participants() if pipe is not None else ())
    options = _live_options(args)   # before the device: a wrong option is named first, with or without a microphone
    voices = _voice_identifier(args)
    source = MicSource(args.input_device, duration=args.seconds, channels=args.channels)
    err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    # the stream starts before the store too: a device that refuses it leaves no meeting (and --overwrite
    # keeps the old one); the blocks it delivers meanwhile wait in its queue. The stream is closed however
    # the block ends (a failure before the pipeline reads it left it running until the process exited).
    # _replacing: a run that fails before its first turn puts back the meeting --overwrite replaces
    lost_first = _Caught(_LostBeforeFirstTurn)
    with lost_first, source, _replacing(out / "meeting.sqlite", args.append) as store:
        if hooks.names:
            store.set_speaker_names(hooks.names)
        # the broadcaster of --session joins ``live`` just before the capture is read
        on_turn, live = _live_sink(_with_decisions(
            None if args.quiet else (lambda t: console.print(format_line(t), markup=False)), decide, args))
        pipe = Pipeline(options, components, hooks=hooks, store=store, on_turn=on_turn, realtime_clock=True,
                        voices=voices, resume=args.append)
        if decide is not None and args.append:
            # the stored meeting's names rank first, as in the store, with the voices the resumed
            # pipeline knows registered (pipe.participants): decided again as they were live
            decide.seed(store.turns())
        meta = _session_meta(store, {"source": f"mic:{source.device.name}", "stem": stem,
                                     "sample_rate": source.sample_rate, "channels": source.channels,
                                     "model": args.model, "vad": args.vad, **_diarizer_meta(options)},
                               pipe.start_time)
        if pipe.start_time:
            err.print(f"[dim]going on with the meeting in {out}/ at {pipe.start_time:.1f} s "
                      f"({_known_speakers(pipe)})[/dim]")
        elif args.append:
            warn(err, f"--append: {out}/ holds no meeting to go on with (no turn stored): a new meeting "
                      "starts")
        err.print(f"listening on {escape(repr(source.device.name))} ({source.sample_rate} Hz, {source.channels} ch); "
                  "Ctrl-C ends the meeting")
        result = None
        watch = _ReaderWatch()   # `voicekit mic | head -3`: the meeting ends as after Ctrl-C

        def announce() -> None:
            if source.first_callback.wait(30.0):
                err.print(f"[dim]audio flowing ({source.first_callback_at - source.started_at:.2f} s after "
                          "the stream started)[/dim]")

        threading.Thread(target=announce, name="voicekit-mic-announce", daemon=True).start()
        broadcaster = _start_session(args, session, out / "meeting.sqlite")   # --session (realtime)
        live.extend([broadcaster] if broadcaster is not None else [])
        def stop() -> None:   # the first Ctrl-C (or SIGTERM); a second Ctrl-C aborts
            source.stop()
            err.print("[yellow]stopping: committing the utterances heard so far (Ctrl-C again to abort)…[/yellow]")

        try:
            with _GracefulStop(stop) as graceful, watch:
                watch.on_gone = graceful.stdout_failed
                result = pipe.run(source, channel="mic")
            heard = round(source.samples_16k / 16000, 3)
        except KeyboardInterrupt:   # the second Ctrl-C: what is still queued is not transcribed
            heard, note = _interrupt_note([pipe], "aborted")
            dropped = source.samples_16k / 16000 - heard
            err.print(f"[yellow]{note}" + (f"; the {dropped:.1f} s captured after it were not transcribed"
                                           if dropped >= 0.05 else "") + "; writing outputs[/yellow]")
        except StoreError as exc:   # a full disk: the turns committed are kept, export writes them
            raise _store_failed(exc, out / "meeting.sqlite", "start the meeting again") from exc
        finally:
            try:
                store.set_speaker_names(pipe.speaker_names())
            except StoreError as exc:   # the store failed already: the error above says so
                logging.getLogger("voicekit.cli").warning("%s", exc)
            hooks.close()
            session_missed, stopped = _close_session(broadcaster, args, err)
        if source.lost is not None and _SetAside.folder(out / "meeting.sqlite").is_dir() \
                and not _committed_turns(out / "meeting.sqlite"):
            raise _LostBeforeFirstTurn(source.lost)   # _replacing puts back the meeting --overwrite replaced
    if lost_first.caught is not None:
        err.print(f"[red]voicekit: error: {escape(str(lost_first.caught))}; no turn was committed: the meeting "
                  f"--overwrite was to replace is kept in {out}/ (exit code 1)[/red]")
        return 1
    duration = round(pipe.start_time + heard, 3)   # the meeting's, every session of it
    meta["sessions"][-1].update(duration=heard, input_overflows=source.input_overflows,
                                queue_overflows=source.feed.overflows)
    meta.update(duration=duration, **{k: sum(x.get(k, 0) for x in meta["sessions"])
                                      for k in ("input_overflows", "queue_overflows")})
    store.set_meta(**meta)
    written = _write_outputs(store.turns(renamed=True), out, stem, meta, store=store)   # names given by `export` too
    if store.has_refined():   # the meeting went on after a refinement; mic writes no refined files
        how = (f"`voicekit export {out} --refine` re-clusters the whole meeting and rewrites them"
               if options.keep_embeddings else f"no speaker embeddings are kept to re-cluster the meeting; "
               f"`voicekit export {out}` rewrites them with this session's turns under their live labels")
        warn(err, f"{stem}.refined.* lack this session's turns: {how}")
    store.close()
    _report_voice_matches([pipe], err, out)
    enrolled = _enrol_voices(args, [pipe], err)
    err.print(f"[dim]{escape(source.report())}[/dim]")
    if result is not None:
        err.print(f"[dim]{'this session: ' if pipe.start_time else ''}{_turns_summary(result)}[/dim]")
        for hint in _hints(result, options, components.transcriber.english_only):
            warn(err, hint)
    _turn_taking_summary(decide, args, err)
    err.print(_wrote_line(written, out))
    _session_log_line(session, err, [broadcaster])
    if session_missed:
        err.print(_session_missed_line(args, [broadcaster]))
    if source.lost is not None:  # the watchdog ended the capture: say so, and fail the run
        again = "--append in place of --overwrite" if args.overwrite else "--append"
        err.print(f"[red]voicekit: error: {escape(source.lost)}; the meeting up to then is written: once the device "
                  f"is back, the same command with {again} goes on with it, on the same clock (exit code 1)[/red]")
        return 1
    if result is None or stopped:
        return 130
    if watch.gone:
        return watch.exit_code
    if not enrolled:
        warn(err, ENROL_FAILED)
    return 1 if session_missed or not enrolled else 0


EPILOG_LIVEKIT = """\
examples:
  voicekit livekit --url ws://localhost:7880 --api-key devkey --api-secret secret --room standup --out out/
  voicekit livekit --url wss://example.livekit.cloud --token "$BOT_TOKEN" --out out/
  voicekit livekit --url ws://localhost:7880 --room standup --room-mic conference-room --out out/

LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET are read when the options are not given.
One lane per participant audio track: a participant's turns carry their name (no diarization);
an unnamed participant reads "@<room>/<n>". A --room-mic identity (or a participant with the
attribute voicekit.room_mic=true) is diarized: "Speaker A", "Speaker B"… in order of first
appearance across the meeting (two room microphones never give two voices one label).
Ctrl-C ends: every lane's open utterance is committed and the outputs are written.
See docs/livekit.md for running against a real livekit-server.
"""


APPEND_COUNT = (" With --append on a meeting that kept no speaker embeddings, this session counts its own "
                "(it cannot know the stored voices).")


def _live_options(args: argparse.Namespace):  # noqa: ANN202 - PipelineOptions
    """The pipeline options of a live meeting: a live meeting is never refined in memory (only
    from the embeddings ``--keep-embeddings`` stores), so its diarizer keeps only the last
    utterance's windows (``DiarizerOptions.keep_history``): memory does not grow with the meeting."""
    import dataclasses

    options = _options(args)
    return dataclasses.replace(options, diarizer=dataclasses.replace(options.diarizer, keep_history=False))


def _check_token_options(args: argparse.Namespace, claims: dict) -> None:
    """With ``--token``, the room, identity and name are the token's: an option that asks for
    another one would be silently ignored, so it is refused."""
    given = {"--room": (args.room, (claims.get("video") or {}).get("room")),
             "--identity": (args.identity, claims.get("sub")),
             "--name": (args.name, claims.get("name"))}
    for flag, (asked, held) in given.items():
        if asked is not None and asked != held:
            raise CliError(f"{flag} {asked!r}: the --token given is for {flag[2:]} {held!r}, and a token's "
                           f"{flag[2:]} cannot be changed; leave out {flag}, or mint a token for it "
                           "(--api-key/--api-secret instead of --token)")


def cmd_livekit(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from voicekit.capture.livekit_bot import LiveKitBot, check_token, mint_token
    from voicekit.outputs import format_line
    from voicekit.pipeline import Components

    console = Console(highlight=False, soft_wrap=True)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    url = (args.url or os.environ.get("LIVEKIT_URL") or "").strip()  # (a pasted URL often ends in a space)
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
    minting = [flag for flag, value in (("--api-key", args.api_key), ("--api-secret", args.api_secret)) if value]
    if token and minting:   # they would be ignored: the token is already signed
        raise CliError(f"{'/'.join(minting)} sign{'s' if len(minting) == 1 else ''} a token voicekit makes, but "
                       "--token gives one already: drop --token to have voicekit make it, or drop "
                       f"{'/'.join(minting)}")
    if not token:
        given = {"identity": args.identity, "name": args.name}   # None: mint_token's default
        token = mint_token(args.api_key or os.environ.get("LIVEKIT_API_KEY", ""),
                           args.api_secret or os.environ.get("LIVEKIT_API_SECRET", ""),
                           args.room or "", **{k: v for k, v in given.items() if v is not None})
    if args.seconds is not None and args.seconds <= 0:
        raise CliError(f"--seconds must be positive, got {args.seconds:g}")
    out = Path(args.out)
    _check_writable(out)
    _take_meeting_dir(out)  # until the command returns: a second command into this --out is refused
    args.stem = _meeting_stem(out / "meeting.sqlite", args)
    session = _make_session(args, out, echo=False)  # a missing API key stops here: nothing written, no model
    options = _live_options(args)
    hooks = _hooks(args, err)
    bot = None   # (below) every lane's registered participants: the room's named people, matched voices
    decide = _turn_taking(args, hooks, lambda: () if bot is None else tuple(dict.fromkeys([
        *bot.participants(),   # (before any lane: a resumed meeting's named people)
        *(p for lane in bot.all_lanes() if lane.pipeline is not None for p in lane.pipeline.participants())])),
        channels=True)
    voices = _voice_list(args)
    if args.enrol_voices and not args.room_mic:
        warn(err, "--enrol-voices enrols the named speakers of a room-microphone lane, and no --room-mic "
                  "is given: only a participant that marks itself voicekit.room_mic=true can give one "
                  "(the named participants' lanes are not diarized)")
    _check_existing_meeting(out / "meeting.sqlite", args, args.stem)
    if args.token:
        claims = check_token(token)   # a fragment or an expired token: one line now, not after the models load
        _check_token_options(args, claims)
    err.print(f"[dim]loading models ({args.model}, {_diarizer_name(options)})…[/dim]")
    components = Components.load(options)  # before the store: a missing model leaves no meeting
    from voicekit.store import MeetingStore

    store_path = out / "meeting.sqlite"
    # --overwrite: the old meeting is set aside until the new one ends; a failed join, or an error
    # before the new meeting's first turn (a connection lost at once), puts it back, as replay and mic do
    aside = _SetAside(store_path) if store_path.exists() and not args.append else None
    store = MeetingStore(store_path)
    meta = {"source": f"livekit:{url}", "stem": args.stem, "model": args.model, "vad": args.vad,
            **_diarizer_meta(options)}
    # the broadcaster of --session joins ``live`` once the room is joined; on_turn runs on the lanes' threads
    on_turn, live = _live_sink(_with_decisions(
        None if args.quiet else (lambda t: console.print(f"{t.channel}  {format_line(t)}", markup=False)),
        decide, args))
    closed: list[tuple[bool, bool]] = []   # the broadcaster's close: (missed, stopped)
    aborted: list[bool] = []   # a second Ctrl-C while leaving

    bot = LiveKitBot(url, token, options, components=components, store=store, hooks=hooks, on_turn=on_turn,
                     room_mics=args.room_mic or (), voices=voices, resume=args.append,
                     on_status=lambda message: err.print(message, style="dim", markup=False))
    if decide is not None and args.append:
        # the stored meeting's names rank first, as in the store, with its named participants
        # registered (bot.participants): a returning participant keeps their bare name
        decide.seed(store.turns())

    async def main() -> bool:
        """Join, then wait for Ctrl-C, --seconds or a lost connection. False: stopped while joining."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)

        def stdout_failed() -> None:   # on a lane's thread
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:   # the loop has closed: the meeting is ending already
                pass

        watch.on_gone = stdout_failed
        err.print(f"[dim]joining {url}…[/dim]")
        joining, stopping = asyncio.ensure_future(bot.connect()), asyncio.ensure_future(stop.wait())
        await asyncio.wait({joining, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not joining.done():   # Ctrl-C while the server has not answered yet
            joining.cancel()
            await asyncio.gather(joining, return_exceptions=True)
            return False
        joining.result()   # a refused token or an unreachable server raises CaptureError here
        # (with --append, a failed join leaves the stored meeting as it was)
        meta.update(_session_meta(store, meta, bot.start_time))
        err.print(f"joined room {bot.room_name!r} at {url}; Ctrl-C ends the meeting"
                  + (f" (going on with the meeting in {out}/ at {bot.start_time:.1f} s)" if bot.start_time else ""))
        if args.append and not bot.start_time:
            warn(err, f"--append: {out}/ holds no meeting to go on with (no turn stored): a new meeting "
                      "starts")
        broadcaster = _start_session(args, session, store_path)   # --session (realtime)
        if broadcaster is not None:
            live.append(broadcaster)
        try:
            await bot.wait(stop, args.seconds)
        finally:
            def abort() -> None:   # a second Ctrl-C while leaving
                if not aborted:
                    aborted.append(True)
                    err.print("[yellow]aborting: what each lane had not committed yet is not transcribed[/yellow]")
                    bot.abort()
            loop.add_signal_handler(signal.SIGINT, abort)
            err.print("[dim]leaving: committing every lane's open utterance (Ctrl-C aborts)…[/dim]")
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
        if meta.get("sessions"):   # this session's, as mic records its own
            meta["sessions"][-1].update(duration=round(meta["duration"] - bot.start_time, 3),
                                        queue_overflows=sum(lane.feed.overflows for lane in bot.all_lanes()))
        store.set_meta(duration=meta["duration"], **({"sessions": meta["sessions"]} if meta.get("sessions") else {}))
        written = _write_outputs(store.turns(renamed=True), out, args.stem, meta, store=store)
        store.close()
        return written

    def discard() -> None:
        """Nothing was recorded: leave no meeting behind, put back the one --overwrite set aside."""
        hooks.close()
        closed.extend(_close_session(broadcaster, args, err) for broadcaster in live)
        _discard_unjoined(store, store_path, args.append, aside)

    def failed_first() -> bool:
        """--overwrite's new meeting failed before its first turn: the old one is put back."""
        return aside is not None and not _committed_turns(store_path)

    watch = _ReaderWatch()   # `voicekit livekit … | head -3`: the meeting ends as after Ctrl-C
    try:
        with watch:
            joined = asyncio.run(main())
    except BaseException:
        if bot.room is None or failed_first():   # never joined, or nothing recorded
            discard()
        else:
            finish()
            if aside is not None:
                aside.drop()
        raise
    if not joined:
        discard()
        err.print("[yellow]stopped before the room was joined: nothing was recorded[/yellow]")
        return 130
    if bot.lost is not None and failed_first():
        discard()
        err.print(f"[red]voicekit: error: {bot.lost}; no turn was committed: the meeting --overwrite was to "
                  f"replace is kept in {out}/ (exit code 1)[/red]")
        return 1
    written = finish()
    if aside is not None:
        aside.drop()
    room_mics = [lane.pipeline for lane in bot.all_lanes() if lane.room_mic]
    _report_voice_matches(room_mics, err, out)
    enrolled = _enrol_voices(args, room_mics, err)
    from rich.markup import escape

    from voicekit.attribution import one_line

    for lane in bot.all_lanes():
        state = f"failed: {lane.error}" if lane.error else "ok"
        filled = (f", {lane.filled_seconds:.1f} s of late audio filled with silence (the machine or the network "
                  "fell behind)") if lane.filled_seconds >= 0.05 else ""
        # (a participant's identity and name are theirs: one line, and no rich markup)
        err.print(f"[dim]{escape(f'{lane.channel} {one_line(lane.label)} ({one_line(lane.identity)})')}: "
                  f"{_plural(len(lane.turns), 'turn')}, {lane.samples / 16000:.1f} s of audio, "
                  f"{_plural(lane.feed.overflows, 'block')} dropped{filled}, {escape(state)}[/dim]")
    _turn_taking_summary(decide, args, err)
    err.print(_wrote_line(written, out))
    _session_log_line(session, err, live)
    missed = any(m for m, _ in closed)
    if missed:
        err.print(_session_missed_line(args, live))
    if bot.lost is not None:
        err.print(f"[red]voicekit: error: {bot.lost}; the meeting up to then is written: the same command with "
                  "--append joins again and goes on with it, on the same clock (exit code 1)[/red]")
        return 1
    if aborted or any(stopped for _, stopped in closed):
        return 130
    if watch.gone:
        return watch.exit_code
    if not enrolled:
        warn(err, ENROL_FAILED)
    return 1 if missed or not enrolled or any(lane.error for lane in bot.all_lanes()) else 0


def _capture_parsers(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("devices", help="list audio input devices (for voicekit mic --device)",
                       description="List the audio input devices PortAudio sees: index, name, host API, "
                                   "channels and native sample rate; '*' marks the default. Give the index "
                                   "or (part of) the name to `voicekit mic --device`.")
    p.set_defaults(func=cmd_devices)

    p = sub.add_parser("mic", help="transcribe the shared conference microphone live",
                       description="Capture a microphone at its native rate and run it through the "
                                   "pipeline: one line per speaker turn, live.",
                       epilog=EPILOG_MIC, formatter_class=HelpFormatter)
    p.add_argument("--device", dest="input_device", default=None, metavar="NAME|INDEX",
                   help="input device: index or (part of) its name from `voicekit devices` (default: "
                        "the default input)")
    p.add_argument("--out", default="out", type=meeting_dir,
                   help="meeting directory for the store and outputs (default out/)")
    p.add_argument("--stem", default=None, help="output file stem (default meeting; with --append, the "
                                                "stored meeting's)")
    p.add_argument("--seconds", type=finite_float, default=None, help="stop by itself after this many seconds")
    p.add_argument("--channels", type=int, default=None,
                   help="input channels to open (default: the device's own count; virtual devices "
                        "advertising more than 8 are opened in stereo)")
    p.add_argument("--quiet", action="store_true", help="no live lines")
    _meeting_args(p)
    _keep_embeddings_arg(p)
    _hook_args(p)
    _voice_args(p)
    _turntaking_args(p)
    _session_args(p)
    _pipeline_args(p, input_device=True, count_scope=APPEND_COUNT)
    p.set_defaults(func=cmd_mic)

    p = sub.add_parser("livekit", help="a bot that transcribes a LiveKit room, one lane per participant",
                       description="Join a LiveKit room and transcribe every participant's audio track.",
                       epilog=EPILOG_LIVEKIT, formatter_class=HelpFormatter)
    p.add_argument("--url", default=None, help="server URL, ws://host:7880 or wss://… (default $LIVEKIT_URL)")
    p.add_argument("--token", default=None, help="the bot's join token (else minted from the key and secret)")
    p.add_argument("--api-key", default=None, help="API key to mint a token (default $LIVEKIT_API_KEY)")
    p.add_argument("--api-secret", default=None, help="API secret to mint a token (default $LIVEKIT_API_SECRET)")
    p.add_argument("--room", default=None, help="room to join (when minting a token; with --token, the token's "
                                                "room, and another one is refused)")
    p.add_argument("--identity", default=None, help="the bot's identity, when voicekit mints the token "
                                                    "(default: voicekit-bot)")
    p.add_argument("--name", default=None, help="the bot's display name in the room, when voicekit mints "
                                                "the token (default: voicekit)")
    p.add_argument("--room-mic", action="append", metavar="IDENTITY",
                   help="a participant whose track is a shared room microphone: diarized (repeatable)")
    p.add_argument("--out", default="out", type=meeting_dir,
                   help="meeting directory for the store and outputs (default out/)")
    p.add_argument("--stem", default=None, help="output file stem (default meeting; with --append, the "
                                                "stored meeting's)")
    p.add_argument("--seconds", type=finite_float, default=None, help="leave by itself after this many seconds")
    p.add_argument("--quiet", action="store_true", help="no live lines")
    _meeting_args(p, voices_return=False)
    _hook_args(p, names_scope=" (room-microphone lanes)")
    _voice_args(p)
    _turntaking_args(p)
    _session_args(p)
    _pipeline_args(p, count_scope=" Each room-microphone lane counts its own." + APPEND_COUNT)
    p.set_defaults(func=cmd_livekit)
