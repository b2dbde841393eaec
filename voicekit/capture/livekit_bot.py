"""The LiveKit room bot: one pipeline lane per participant audio track, all into one meeting store.

The bot joins a room with the ``livekit`` SDK (``rtc.Room``), is auto-subscribed to every audio
track (including tracks of people who join later) and gives each track a *lane*: an
``rtc.AudioStream`` at 16 kHz mono (the SDK resamples) feeding a :class:`LiveFeed`, and a
:class:`Pipeline` on its own thread reading it. Every lane shares one :class:`Components` (models
are loaded once; calls into them are serialised by a lock, see :class:`SharedComponents`).

Speakers:

* a participant's track names its speaker: no diarization; every turn's ``speaker`` is the
  participant's name, with ``metadata["sender_name"]`` the same, when the token gave a name.
  An unnamed participant's turns carry no ``sender_name`` and read ``@<channel>`` (attribution.md
  A6), never the identity. The channel is ``<room>/<n>``, ``n`` the lane number (1, 2, … in order
  of subscription), the room's name made a channel id (:func:`voicekit.turns.channel_id`).
* a track marked as a shared room microphone (the participant attribute ``voicekit.room_mic``
  set to ``1``/``true``, or an identity given with ``room_mics``) is diarized like
  ``voicekit mic``; its speakers read "Speaker A", "Speaker B"… in order of first appearance
  across the meeting: two room microphones share one allocator
  (:class:`~voicekit.turns.SpeakerLabels`), so their voices never share a label.

Times: a lane's audio clock starts at its first frame; its turns are shifted by that moment's
offset from the bot's join (after the stored audio, for a meeting that goes on: ``resume``), so
every turn is in meeting time. Turns are committed to the shared
store under one lock, and the store reads them back in time order. A lane that fails (an error in
its pipeline or its audio stream) is logged and closed; the other lanes go on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from voicekit.attribution import Participant, display_name, one_line
from voicekit.audio import SAMPLE_RATE
from voicekit.capture import CaptureError
from voicekit.hooks import HookRunner
from voicekit.pipeline import Components, MeetingAborted, Pipeline, PipelineOptions, SingleSpeaker
from voicekit.sources import LiveFeed
from voicekit.store import MeetingStore
from voicekit.turns import SpeakerLabels, SpeakerTurn, channel_id, is_speaker_label, label_read_in
from voicekit.voiceprints import VoiceIdentifier, Voiceprint

log = logging.getLogger(__name__)

GAP_FILL_SECONDS = 0.5
"""A lane whose audio arrives this much later than its clock expects gets the gap as silence."""
GAP_JITTER_SECONDS = 0.2
"""Of a gap, this much is left unfilled: frames delayed by network jitter, not lost."""

DISCONNECTS = {
    "DUPLICATE_IDENTITY": "another participant joined the room with the bot's identity, and the server "
                          "removed the bot: give each bot its own --identity",
    "PARTICIPANT_REMOVED": "the bot was removed from the room (by the server or a moderator)",
    "SERVER_SHUTDOWN": "the LiveKit server shut down",
}
"""What :attr:`LiveKitBot.lost` says for a ``DisconnectReason`` that is not a lost connection."""

ROOM_MIC_ATTRIBUTE = "voicekit.room_mic"
"""Participant attribute marking a shared room microphone (value ``1``, ``true`` or ``yes``)."""


def _rtc():
    try:
        from livekit import rtc
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise CaptureError("the LiveKit SDK is not installed: pip install livekit livekit-api") from exc
    return rtc


def mint_token(api_key: str, api_secret: str, room: str, identity: str = "voicekit-bot",
               name: str | None = "voicekit", ttl_seconds: int = 6 * 3600) -> str:
    """Mint a join token for the bot with ``livekit-api``.

    Raises:
        CaptureError: livekit-api is missing, or the key/secret are empty.
    """
    try:
        from livekit import api
    except ImportError as exc:  # pragma: no cover
        raise CaptureError("livekit-api is not installed: pip install livekit-api") from exc
    if not api_key or not api_secret:
        raise CaptureError("minting a token needs --api-key and --api-secret (or LIVEKIT_API_KEY / "
                           "LIVEKIT_API_SECRET); or pass --token")
    if not room:
        raise CaptureError("minting a token needs --room")
    t = api.AccessToken(api_key, api_secret).with_identity(identity).with_ttl(datetime.timedelta(seconds=ttl_seconds))
    if name:
        t = t.with_name(name)
    with warnings.catch_warnings():
        # pyjwt warns when the HMAC key is shorter than 32 bytes; the key is the server's (livekit-server
        # --dev uses "secret"), the bot can only use it as it is
        warnings.filterwarnings("ignore", message=".*HMAC key.*")
        return t.with_grants(api.VideoGrants(room_join=True, room=room, can_subscribe=True)).to_jwt()


def check_token(token: str, now: float | None = None) -> dict:
    """Read a join token's claims without verifying its signature (only the server holds the
    secret), so that a pasted fragment or an expired token is refused before the models load.

    Args:
        token: the JWT a LiveKit server or its SDK minted.
        now: Unix time to check the expiry against (default: the clock).

    Returns:
        the token's claims (``sub`` the identity, ``video.room`` the room, ``exp``…).

    Raises:
        CaptureError: not a JWT, or expired.
    """
    import jwt   # pyjwt, which livekit-api requires

    try:
        claims = jwt.decode(token.strip(), options={"verify_signature": False})
    except jwt.PyJWTError as exc:
        raise CaptureError(f"--token is not a LiveKit join token (a JWT: three dot-separated parts): {exc}; "
                           "pass the whole token, or --api-key/--api-secret/--room to mint one") from None
    exp = claims.get("exp")
    if isinstance(exp, (int, float)) and exp <= (time.time() if now is None else now):
        when = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        raise CaptureError(f"--token expired at {when}: mint a new one (or pass --api-key/--api-secret/--room)")
    return claims


class _Locked:
    """A proxy calling selected methods of a model under a lock."""

    def __init__(self, target, lock: threading.Lock, methods: Iterable[str]) -> None:  # noqa: ANN001
        self._target = target
        self._lock = lock
        self._methods = set(methods)

    def __getattr__(self, name: str):  # noqa: ANN204
        value = getattr(self._target, name)
        if name in self._methods and callable(value):
            def locked(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
                with self._lock:
                    return value(*args, **kwargs)
            return locked
        return value


def SharedComponents(components: Components) -> Components:  # noqa: N802 - a factory named as the type
    """The same models behind one lock, for several lanes on several threads.

    CTranslate2 and the speaker encoder would accept concurrent calls, but they would then fight
    for the same cores; one model call at a time keeps each call as fast as in a single run.
    """
    lock = threading.Lock()
    encoder = components.encoder
    return Components(_Locked(components.transcriber, lock, ["transcribe"]),
                      _Locked(encoder, lock, ["embed_windows", "embed_batch"]) if encoder is not None else None,
                      components.pyannote)  # pyannote's models hold their own lock


def _lane_name(name: str) -> str:
    """The name a participant's turns carry in the store and the transcripts: the name as a model
    is shown it (:func:`~voicekit.attribution.display_name`, A6: no leading ``@``), or "" when that
    reads as a diarization label (``Speaker A``, ``SPEAKER_01``, :func:`~voicekit.turns.label_read_in`):
    a room microphone's voice, or a --speaker-names rename, could hold the same label, and the
    transcript would show two people as one."""
    shown = display_name(name)
    return "" if label_read_in(shown) else shown


@dataclass
class Lane:
    """One participant track through its own pipeline.

    Attributes:
        number: 1, 2, … in order of subscription.
        channel: ``<room>/<number>``.
        identity, name: the participant's identity and display name ("" when the token gave none),
            the name as a model is shown it (:func:`voicekit.attribution.display_name`: one line of
            plain text, so a line break or a terminal escape cannot forge a line of the transcript,
            and no leading ``@``, so ``@room/2`` cannot pass for a nameless lane's channel label);
            "" too for a name that reads as a diarization label (:func:`_lane_name`).
        track_sid: the track.
        room_mic: diarized as a shared room microphone.
        offset: meeting time (s) of the lane's first audio frame (from the join, after a resumed
            meeting's audio); None before it.
        error: the exception that ended the lane, if one did.
    """

    number: int
    channel: str
    identity: str
    name: str
    track_sid: str
    room_mic: bool
    feed: LiveFeed
    offset: float | None = None
    first_frame_at: float | None = None
    samples: int = 0
    filled_seconds: float = 0.0
    max_backlog_seconds: float = 0.0
    error: BaseException | None = None
    closed: bool = False
    turns: list[SpeakerTurn] = field(default_factory=list)
    kept: list[np.ndarray] | None = None
    thread: threading.Thread | None = None
    task: asyncio.Task | None = None
    pipeline: Pipeline | None = None

    @property
    def label(self) -> str:
        """The speaker of this lane's turns (single-person lanes)."""
        return self.name or f"@{self.channel}"


class _LanePipeline(Pipeline):
    """A lane's pipeline: its turns moved to meeting time and named before hooks and the store."""

    def __init__(self, bot: "LiveKitBot", lane: Lane, **kw) -> None:  # noqa: ANN003
        super().__init__(**kw)
        self.bot = bot
        self.lane = lane
        if not lane.room_mic:
            self.diarizer = SingleSpeaker(lane.label)

    def participants(self) -> tuple[Participant, ...]:
        """The enrolled voices matched on this lane, and every named person's lane of the room:
        a LiveKit identity is a registered participant (A11), whose display name a hook's rename
        or another source cannot take."""
        return (*super().participants(), *self.bot.participants())

    def _meeting_time(self, t: float) -> float:
        return t + (self.lane.offset or 0.0)

    def _store_duration(self) -> None:
        """Nothing: a lane may end mid-meeting, on its own thread; the room's duration is the
        bot's meeting time, which ``voicekit livekit`` stores when the meeting ends."""

    def _emitted_now(self) -> float:
        return self.bot.meeting_time()   # the room's clock: every lane's turns on one timeline

    def _commit(self, turn: SpeakerTurn) -> None:
        lane = self.lane
        shift = lane.offset or 0.0
        words = tuple(dataclasses.replace(w, start=round(w.start + shift, 3), end=round(w.end + shift, 3))
                      for w in turn.words)
        meta = dict(turn.metadata)
        meta["participant_id"] = lane.identity
        meta["track_sid"] = lane.track_sid
        if not lane.room_mic and not lane.name:
            meta.pop("sender_name", None)   # unnamed: labelled by the channel, never the identity
        turn = turn.replace(start=round(turn.start + shift, 3), end=round(turn.end + shift, 3), words=words,
                            metadata=meta, emitted_at=round(self._emitted_now(), 3))
        with self.bot._commit_lock:
            n = len(self.turns)
            super()._commit(turn)
            if len(self.turns) > n:
                lane.turns.append(self.turns[-1])
                self.bot.turns.append(self.turns[-1])


class LiveKitBot:
    """Join a LiveKit room and transcribe every participant's audio track.

    Args:
        url: the server (``ws://host:7880`` / ``wss://…``).
        token: the bot's join token (see :func:`mint_token`).
        options: pipeline options for every lane.
        components: loaded models (loaded here when None); shared by every lane.
        store: the meeting store every lane commits to (None: keep turns in memory only).
        hooks: the hook runner (shared; turns are committed one at a time).
        on_turn: called with every committed turn (from the lane's thread).
        room_mics: identities whose tracks are shared room microphones (diarized).
        max_queue_seconds: capacity of each lane's queue.
        keep_audio: keep each lane's received 16 kHz audio in ``lane.kept`` (tests, diagnostics).
        voices: enrolled voiceprints (opt-in, docs/voiceprints.md): each room-microphone lane
            names the speakers whose voice matches (:class:`~voicekit.voiceprints.VoiceIdentifier`);
            None: no identification.
        on_status: called (on the event loop) with a one-line message when a lane opens or ends,
            when the connection drops and the SDK tries again, and when it is back.
        resume: continue the meeting already in ``store`` (``voicekit livekit --append``): meeting
            time goes on from its :meth:`~voicekit.store.MeetingStore.resume_point`, lanes are
            numbered after its lanes (no channel of this session is one of its) and a room
            microphone's speakers are labelled after its labels.

    Raises:
        ValueError: ``resume`` without a ``store``.

    Attributes:
        lost: None while connected; else why the room was left without :meth:`close`: the
            server went away and the SDK gave up reconnecting, the bot was removed, or another
            participant took its identity. :attr:`ended` is set then too.
        room_closed: True when the server closed the room (the host ended the meeting): not an
            error, but :attr:`ended` is set.
        ended: an ``asyncio.Event`` (made by :meth:`connect`) set when the room is left without
            :meth:`close`.
    """

    def __init__(self, url: str, token: str, options: PipelineOptions | None = None,
                 components: Components | None = None, store: MeetingStore | None = None,
                 hooks: HookRunner | None = None, on_turn: Callable[[SpeakerTurn], None] | None = None,
                 room_mics: Iterable[str] = (), max_queue_seconds: float = 30.0,
                 keep_audio: bool = False, voices: Sequence[Voiceprint] | None = None,
                 on_status: Callable[[str], None] | None = None, resume: bool = False) -> None:
        if resume and store is None:
            raise ValueError("resume=True continues the meeting in a store: pass store")
        self.keep_audio = keep_audio
        self.on_status = on_status
        self.lost: str | None = None
        self.room_closed = False
        self.ended: asyncio.Event | None = None
        self._closing = False
        self.voices = voices
        self.url = url
        # a pasted token's blank or line break: the server refused it as "invalid header padding",
        # which voicekit's message put down to the keys (a LiveKit trial); check_token strips too
        self.token = token.strip()
        self.options = options or PipelineOptions()
        self.components = SharedComponents(components or Components.load(self.options))
        self.store = store
        self.hooks = hooks or HookRunner()
        self.on_turn = on_turn
        self.room_mics = set(room_mics)
        self.max_queue_seconds = max_queue_seconds
        self.lanes: dict[str, Lane] = {}
        self.ended_lanes: list[Lane] = []
        self.turns: list[SpeakerTurn] = []
        self.t0 = time.monotonic()
        self.room = None
        self.room_name = ""
        self._commit_lock = threading.Lock()
        self._next_lane = 1
        self.start_time = 0.0  # meeting time (s) of the join
        self._stored_participants: tuple[Participant, ...] = ()
        # one allocator for every room-microphone lane: two voices never share a "Speaker X", and a
        # resumed meeting's labels are never given to a new room speaker
        self.speaker_labels = SpeakerLabels()
        if resume:
            stored = store.turns()
            self.start_time = store.resume_point().start_time
            numbers = [int(n) for t in stored for n in [t.channel.rpartition("/")[2]] if n.isdigit()]
            self._next_lane = max(numbers, default=0) + 1
            self.speaker_labels.reserve(store.speaker_labels())
            # the named people of the stored sessions stay registered participants (A11): one who
            # comes back keeps the bare name, in the store and in the turn-taking decisions
            self._stored_participants = tuple(dict.fromkeys(
                Participant(id=t.metadata["participant_id"], display_name=t.speaker, channels=(t.channel,))
                for t in stored if t.metadata.get("participant_id") and not is_speaker_label(t.speaker)
                and not t.speaker.startswith("@")))
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- connection -----------------------------------------------------------------------
    async def connect(self) -> None:
        """Join the room and start a lane for every audio track (now and later).

        Raises:
            CaptureError: the server refused the token or cannot be reached.
        """
        rtc = _rtc()
        self._loop = asyncio.get_running_loop()
        room = rtc.Room()
        room.on("track_subscribed", self._on_track_subscribed)
        room.on("track_unsubscribed", self._on_track_unsubscribed)
        room.on("participant_disconnected", self._on_participant_disconnected)
        room.on("disconnected", self._on_disconnected)
        room.on("reconnecting", lambda: self._status(f"connection to {self.url} lost: reconnecting…"))
        room.on("reconnected", lambda: self._status(f"reconnected to {self.url}"))
        self.ended = asyncio.Event()
        try:
            await room.connect(self.url, self.token)
        except rtc.ConnectError as exc:
            msg = str(getattr(exc, "message", exc)).strip()
            if "<" in msg:  # an HTTP server's error page (the URL is not a LiveKit server): its first line
                msg = msg.split("<", 1)[0].strip(" :") or "an HTML page instead of the LiveKit protocol"
            if "401" in msg or "nauthori" in msg or "token" in msg.lower():
                raise CaptureError(f"the LiveKit server at {self.url} refused the bot's token ({msg}); check "
                                   "--api-key/--api-secret against the server's keys, the token's room "
                                   "grant and its expiry") from exc
            raise CaptureError(f"cannot join the LiveKit room at {self.url} ({msg}); is the server "
                               "running and the URL right (ws://host:7880)?") from exc
        self.room = room
        self.room_name = room.name or "room"
        self.t0 = time.monotonic()
        log.info("joined room %r as %r", self.room_name, room.local_participant.identity)

    def meeting_time(self) -> float:
        """Seconds of meeting time now: since the join, after the resumed meeting's."""
        return self.start_time + time.monotonic() - self.t0

    def _status(self, message: str) -> None:
        log.info("%s", message)
        if self.on_status is not None:
            self.on_status(message)

    def _on_disconnected(self, reason=None) -> None:  # noqa: ANN001
        if self._closing:
            return
        rtc = _rtc()
        try:
            why = rtc.DisconnectReason.Name(reason) if reason is not None else "UNKNOWN_REASON"
        except (AttributeError, ValueError, TypeError):
            why = str(reason)
        if why in ("ROOM_DELETED", "ROOM_CLOSED"):   # the host ended the meeting: a normal end
            self.room_closed = True
            self._status(f"the room was closed on the server ({why}): the meeting is over")
        else:
            self.lost = DISCONNECTS.get(why, f"the connection to the LiveKit server at {self.url} was lost and "
                                             "could not be re-established" + (
                                                 "" if why == "UNKNOWN_REASON" else f" ({why})"))
            log.info("%s", self.lost)
        if self.ended is not None:
            self.ended.set()

    async def close(self) -> None:
        """End every lane (their open utterances are committed) and leave the room."""
        self._closing = True
        for lane in list(self.lanes.values()):
            self._end_lane(lane)
        for lane in self.all_lanes():
            if lane.task is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(lane.task), 5)
                except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001
                    pass
        await asyncio.to_thread(self.join_lanes)
        if self.room is not None:
            try:
                await self.room.disconnect()
            except Exception:  # noqa: BLE001
                log.exception("leaving the room failed")

    def join_lanes(self, timeout: float = 120.0) -> None:
        """Wait for every ended lane's pipeline to finish."""
        deadline = time.monotonic() + timeout
        for lane in self.all_lanes():
            if lane.thread is not None:
                lane.thread.join(max(0.0, deadline - time.monotonic()))

    async def run(self, stop: asyncio.Event, seconds: float | None = None) -> None:
        """Connect, transcribe until ``stop`` is set, ``seconds`` pass or the connection is lost
        (:attr:`lost` says why), then close."""
        await self.connect()
        try:
            await self.wait(stop, seconds)
        finally:
            await self.close()

    async def wait(self, stop: asyncio.Event, seconds: float | None = None) -> None:
        """Return when ``stop`` is set, after ``seconds`` (None: no limit), or when the connection
        is lost (:attr:`ended`)."""
        waits = [asyncio.ensure_future(stop.wait())]
        if self.ended is not None:
            waits.append(asyncio.ensure_future(self.ended.wait()))
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    def participants(self) -> tuple[Participant, ...]:
        """One registered participant per lane of a named person (not a room microphone, which
        many people share): ``id`` the LiveKit identity, the display name, the lane's channel
        (attribution.md A11: a LiveKit identity keeps the bare name against look-alikes); with
        ``resume``, also one per named person's lane of the stored sessions."""
        return self._stored_participants + tuple(
            Participant(id=lane.identity, display_name=lane.name, channels=(lane.channel,))
            for lane in self.all_lanes() if lane.name and not lane.room_mic)

    def all_lanes(self) -> list[Lane]:
        """Every lane of the meeting, in the order they opened: those open or ended in
        :attr:`lanes` (one per track), and those a reconnect replaced (:attr:`ended_lanes`)."""
        return sorted([*self.ended_lanes, *list(self.lanes.values())], key=lambda lane: lane.number)

    # --- lanes ----------------------------------------------------------------------------
    def _is_room_mic(self, participant) -> bool:  # noqa: ANN001
        flag = str((getattr(participant, "attributes", None) or {}).get(ROOM_MIC_ATTRIBUTE, "")).lower()
        return participant.identity in self.room_mics or flag in ("1", "true", "yes")

    def _on_track_subscribed(self, track, publication, participant) -> None:  # noqa: ANN001
        if self._closing:   # a lane opened while close() ends them would be ended by nobody (a review:
            return          # close() then waited 120 s for its thread)
        rtc = _rtc()
        old = self.lanes.get(publication.sid)
        if track.kind != rtc.TrackKind.KIND_AUDIO or (old is not None and not old.closed):
            return
        if old is not None:
            # the same track again, after a full reconnect (the SDK drops every participant, then
            # the server sends their tracks again): a new lane; the ended one keeps its turns
            self.ended_lanes.append(self.lanes.pop(publication.sid))
        n = self._next_lane
        self._next_lane += 1
        name = _lane_name(participant.name or "")
        if participant.name and not name:
            self._status(f"participant {one_line(participant.identity)}'s name {one_line(participant.name)!r} "
                         "reads as a diarization label or holds nothing to show: their lane is labelled by its "
                         "channel (a room microphone's speakers are 'Speaker A', 'Speaker B'…)")
        lane = Lane(number=n, channel=f"{channel_id(self.room_name)}/{n}", identity=participant.identity,
                    name=name, track_sid=publication.sid,
                    room_mic=self._is_room_mic(participant),
                    feed=LiveFeed(max_seconds=self.max_queue_seconds),
                    kept=[] if self.keep_audio else None)
        self.lanes[publication.sid] = lane
        self._status(f"lane {lane.channel}: {lane.label} ({one_line(lane.identity)})"
                     + (", room microphone: diarized" if lane.room_mic else ""))
        lane.pipeline = _LanePipeline(self, lane, options=self.options, components=self.components,
                                      hooks=self.hooks, store=self.store, on_turn=self.on_turn,
                                      realtime_clock=True, labels=self.speaker_labels,
                                      voices=VoiceIdentifier(self.voices)
                                      if lane.room_mic and self.voices is not None else None)
        lane.thread = threading.Thread(target=self._run_lane, args=(lane,), name=f"voicekit-lane-{n}",
                                       daemon=True)
        lane.thread.start()
        lane.task = asyncio.ensure_future(self._read_track(lane, track))

    def _on_track_unsubscribed(self, track, publication, participant) -> None:  # noqa: ANN001
        lane = self.lanes.get(publication.sid)
        if lane is not None:
            self._end_lane(lane)

    def _on_participant_disconnected(self, participant) -> None:  # noqa: ANN001
        for lane in list(self.lanes.values()):
            if lane.identity == participant.identity:
                self._end_lane(lane)

    def _end_lane(self, lane: Lane) -> None:
        if lane.closed:
            return
        lane.closed = True
        if lane.task is not None and not lane.task.done():
            lane.task.cancel()
        lane.feed.close()
        if not self._closing:
            self._status(f"lane {lane.channel} ended: {lane.label} ({one_line(lane.identity)})")

    async def _read_track(self, lane: Lane, track) -> None:  # noqa: ANN001
        rtc = _rtc()
        stream = rtc.AudioStream(track, sample_rate=SAMPLE_RATE, num_channels=1, frame_size_ms=100)
        try:
            async for event in stream:
                if lane.closed:
                    break
                frame = event.frame
                block = np.frombuffer(frame.data, dtype=np.int16).astype(np.float32) / 32768.0
                if lane.first_frame_at is None:
                    lane.first_frame_at = time.monotonic()
                    lane.offset = round(self.start_time + lane.first_frame_at - self.t0, 3)
                else:
                    # the lane's audio clock follows the wall clock: a gap in what arrives (a stalled
                    # transport) becomes silence, so turn times stay comparable across lanes
                    late = time.monotonic() - lane.first_frame_at - lane.samples / SAMPLE_RATE
                    if late > GAP_FILL_SECONDS:
                        gap = np.zeros(int((late - GAP_JITTER_SECONDS) * SAMPLE_RATE), dtype=np.float32)
                        lane.filled_seconds += len(gap) / SAMPLE_RATE
                        self._push(lane, gap)
                self._push(lane, block)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # noqa: BLE001 - one lane's failure never stops the others
            lane.error = exc
            log.exception("lane %s: the audio stream failed; the lane is closed", lane.channel)
        finally:
            if not lane.closed:
                lane.closed = True
                lane.feed.close()
            try:
                await stream.aclose()
            except Exception:  # noqa: BLE001
                pass

    def _push(self, lane: Lane, block: np.ndarray) -> None:
        lane.samples += len(block)
        if lane.kept is not None:
            lane.kept.append(block)
        lane.feed.push(block)
        backlog = lane.feed._queue.qsize() * 0.1
        if backlog > lane.max_backlog_seconds:
            lane.max_backlog_seconds = backlog

    def abort(self) -> None:
        """Stop every lane's pipeline at its next block (any thread; a second Ctrl-C): what each
        lane committed stays, its queued audio and open utterance are not transcribed. Then
        :meth:`close` leaves the room."""
        for lane in self.all_lanes():
            lane.feed.abort()   # a lane waiting for audio, or with audio queued
            if lane.pipeline is not None:
                lane.pipeline.abort()   # a lane that already reads its last block, or finishes

    def _run_lane(self, lane: Lane) -> None:
        try:
            lane.pipeline.run(lane.feed, channel=lane.channel)
        except MeetingAborted:
            log.info("lane %s (%s) aborted", lane.channel, lane.label)
        except Exception as exc:  # noqa: BLE001 - one lane's failure never stops the others
            lane.error = exc
            log.exception("lane %s (%s) failed; the other lanes go on", lane.channel, lane.label)
            if self._loop is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._end_lane, lane)
            try:
                for _ in lane.feed:   # drain what is queued so the reader never blocks
                    pass
            except MeetingAborted:
                pass
