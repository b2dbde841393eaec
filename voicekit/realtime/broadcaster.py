"""The broadcaster: every committed human turn of the meeting into a live model session.

It runs on its own thread with its own asyncio loop. The pipeline hands it turns through
:meth:`Broadcaster.on_turn`, which only puts them on a bounded queue and returns: a slow or
unreachable provider never blocks the audio pipeline.

**Queue policy when full** (``queue_size`` items waiting): the new item is not queued; a warning
says so (the first time, then every 100th time). A committed turn is not lost: it stays in the
meeting store, and the broadcaster sends every turn the session has no delivery row for, in
commit order, as soon as it catches up ("catch up from the store"). Without a store the turn is
dropped and counted in ``stats["dropped"]``. Instructions and reply requests are held in memory
only; a full queue drops them (with the warning).

**Delivery**: a turn is recorded as delivered in the meeting's SQLite file
(:class:`~voicekit.realtime.delivery.DeliveryLog`) once the provider accepted it. After a
dropped connection the broadcaster reconnects with exponential backoff (``backoff_initial``,
doubling up to ``backoff_max``; back to ``backoff_initial`` once a connection has delivered at
least one new turn (the history sent again for context does not count), so occasional drops in a
long meeting each wait the first delay, while a server that accepts connections and drops them
before any progress is still backed off) and sends, from the store, every turn without a
delivery row: nothing lost, nothing recorded twice. The new provider conversation holds nothing
of the old one, so it is first sent again the last ``history_on_reconnect`` items the old one had taken;
likewise a new run on a meeting an earlier run fed (``voicekit mic --append --session …``)
first sends its new conversation the last turns delivered before. One broadcaster per
``session_id`` at a time: two would share the delivery rows.

**Attribution** (``shared/docs/attribution.md`` A3, A8–A10): items are built by
:class:`voicekit.attribution.RealtimeAttribution`. Once the session has been sent two speakers
every later line is labelled, even when the meeting drops back to one; the speakers sent are
kept durably, so this holds across reconnects and restarts. A reconnect opens a new provider
conversation, which has not seen the note: the note goes with the first labelled item of each
provider conversation (once per conversation), with who said the bare lines it was sent before.
Application instructions carry no label.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from voicekit.attribution import Participant, RealtimeAttribution, SpeakerLabel, turn_role
from voicekit.attribution.labels import is_speaker_turn
from voicekit.attribution.register import MemoryRegister
from voicekit.attribution.views import unlabelled_content
from voicekit.realtime.delivery import DELIVERED, REJECTED, SKIPPED, DeliveryLog
from voicekit.realtime.session import (ProviderError, RealtimeSession, SessionClosed, SessionEvent, SessionRefused,
                                       log)
from voicekit.turns import SpeakerTurn

_TURN, _INSTRUCTION, _REPLY = "turn", "instruction", "reply"
_INSTRUCTION_KEY = ""   # the key of an application instruction in the history (a turn's is vk-t<id>)

CLOSE_GRACE = 1.0
"""Seconds a session's close may take past :meth:`Broadcaster.close`'s timeout (a reply in
flight was waited for until then) before its connection is aborted."""


class Broadcaster:
    """Feeds a meeting's committed turns into one realtime session.

    Args:
        session: the session adapter (connected, and reconnected, by the broadcaster).
        store_path: the meeting store (``DIR/meeting.sqlite``); turns are sent from it and the
            delivery bookkeeping lives in it. None: turns are sent as they come, not durably.
        session_id: the session's name in the bookkeeping (default ``<adapter name>``).
        attribution: label speakers (A3, A8–A10); off: every turn goes as its bare text.
        participants: the meeting's participant records (names, A4/A5).
        assistant_id: the agent the session speaks as (its own turns are not sent).
        queue_size: items the queue holds before the full-queue policy applies.
        backoff_initial, backoff_max: reconnect delays in seconds: doubling after each failed
            connect or dropped connection, up to ``backoff_max``; a connection that dropped after
            the provider accepted (acknowledged) at least one new turn starts again at
            ``backoff_initial`` (history sent again for context is no progress).
        reply_when: called with each delivered turn; True asks the model for a reply.
        on_event: called (on the broadcaster's thread) with every :class:`SessionEvent` the
            provider sends, and with the broadcaster's own ``connect_failed``, ``refused``,
            ``dropped`` and ``unsent`` events (``text`` says what happened; ``unsent`` comes from
            :meth:`close`, on its caller's thread), so a session log records a provider it never
            reached.
        meeting_id: the author register's meeting id.
        reserved_names: the names and aliases of the meeting's AI members (``--members``): a
            person whose name reads alike one is labelled ``Iris (a participant)``, as
            ``--explain`` and the members' views show them (:class:`RealtimeAttribution`).
        history_on_reconnect: after a dropped connection, the new provider conversation is first
            sent again the last this many items the old one had taken (default 100; 0: none), so
            the model keeps the meeting's recent context; a new run on a store an earlier run fed
            first sends the last this many turns delivered before.

    Attributes:
        error: why the broadcaster's thread stopped, or None: a
            :class:`~voicekit.realtime.session.SessionRefused` connect (HTTP 401/403, close code
            1008: it is not retried, and every item given after it counts in :attr:`backlog`), an
            ``OSError`` of a session's connect, or a bug.

    Raises:
        TypeError: ``session`` is not a :class:`~voicekit.realtime.session.RealtimeSession`.
    """

    def __init__(self, session: RealtimeSession, store_path: str | Path | None = None, *,
                 session_id: str | None = None, attribution: bool = True,
                 participants: Sequence[Participant] = (), assistant_id: str | None = None,
                 queue_size: int = 256, backoff_initial: float = 0.5, backoff_max: float = 30.0,
                 reply_when: Callable[[SpeakerTurn], bool] | None = None,
                 on_event: Callable[[SessionEvent], None] | None = None,
                 meeting_id: str = "default", history_on_reconnect: int = 100,
                 reserved_names: Sequence[str] = ()) -> None:
        if not isinstance(session, RealtimeSession):
            raise TypeError(f"Broadcaster takes a voicekit.realtime.RealtimeSession (make_session('local'), "
                            f"'openai' or 'gemini'), not {type(session).__name__} {session!r}")
        self.session = session
        self.reserved_names = tuple(reserved_names)
        # (item, key, label, labelled): what the provider conversation took, for a reconnect's resend
        self._history: collections.deque[tuple[dict[str, Any], str, SpeakerLabel | None, bool]] = collections.deque(
            maxlen=max(0, history_on_reconnect))
        self.store_path = Path(store_path) if store_path else None
        self.session_id = session_id or session.name
        self.attribution = attribution
        self.participants = tuple(participants)
        self.assistant_id = assistant_id
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.reply_when = reply_when
        self.on_event = on_event
        self.meeting_id = meeting_id
        self.stats = {"delivered": 0, "rejected": 0, "dropped": 0, "queue_full": 0, "connects": 0,
                      "reconnects": 0, "instructions": 0, "replies_requested": 0, "resent_after_reconnect": 0,
                      "resent_after_restart": 0}
        self.rejected_turns: list[tuple[int | None, float]] = []   # (turn id, start in seconds) the provider refused
        self.connected = threading.Event()
        self._q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=queue_size)
        self._queue_size = queue_size
        self._catch_up = False
        self._catch_lock = threading.Lock()   # _catch_up and _catch_up_through: set by on_turn's callers
        self._earlier_sent = False   # the restart resend (_resend_earlier_run) has gone out in full
        self._stopping = False
        self._deadline = float("inf")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._pending: collections.deque[tuple[str, Any]] = collections.deque()
        self._sent_speakers: list[SpeakerLabel] = []
        self._attr: RealtimeAttribution | None = None
        self._register: MemoryRegister | None = None  # labels when there is no store
        self._item_numbers = itertools.count(1)   # item ids of turns without a turn id (vk-x<n>)
        self._catch_up_through: int | None = None  # the last turn a full queue dropped (it is in the store)
        self._reply_lost = False  # a reply owed when the connection dropped
        self._dropped_conn = False
        self._accepted = 0   # turns delivered on the current connection (history sent again not counted)
        self._log: DeliveryLog | None = None
        self.error: BaseException | None = None
        self._refused_backlog = 0   # items given after the provider refused the connection: never sent

    # --- the pipeline's side (any thread, never blocks) ----------------------------------
    def start(self) -> "Broadcaster":
        """Start the broadcaster's thread; returns self.

        Raises:
            RuntimeError: when its thread is already running (a second thread would share the
                first one's queue on another event loop); :meth:`close` it first.
        """
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError(f"the broadcaster of session {self.session_id} is already started: close() it "
                               "before starting it again")
        self.error, self._refused_backlog = None, 0   # (a refused key may have been fixed since)
        self._stopping, self._deadline = False, float("inf")   # (started again after close())
        self._loop = asyncio.new_event_loop()
        self._wake = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name=f"realtime-{self.session_id}", daemon=True)
        self._thread.start()
        return self

    def on_turn(self, turn: SpeakerTurn) -> None:
        """The pipeline's ``on_turn`` callback: queue a committed turn and return at once.

        Raises:
            TypeError: ``turn`` is not a :class:`~voicekit.turns.SpeakerTurn` (text to send as
                an instruction goes to :meth:`instruct`).
        """
        if not isinstance(turn, SpeakerTurn):
            raise TypeError(f"on_turn takes a committed voicekit.turns.SpeakerTurn, not {type(turn).__name__} "
                            f"{turn!r}; an application instruction goes to instruct(text)")
        self._put((_TURN, turn), f"turn {turn.turn_id}")

    def instruct(self, text: str) -> None:
        """Inject an application instruction (unlabelled) after what is already queued."""
        self._put((_INSTRUCTION, text), "an instruction")

    def request_reply(self) -> None:
        """Ask the model for a reply after what is already queued (deferred while one is in flight)."""
        self._put((_REPLY, None), "a reply request")

    def _put(self, item: tuple[str, Any], what: str) -> None:
        if self._stopping:   # closed: nothing reads the queue any more (a library trial: silently gone)
            with self._catch_lock:
                self.stats["dropped"] += item[0] != _TURN or self.store_path is None
            log.warning("realtime session %s is closed: %s not sent%s", self.session_id, what,
                        " (it stays in the store)" if item[0] == _TURN and self.store_path is not None else
                        "; start() the broadcaster again to send what comes next")
            return
        if self.refused:   # nothing is sent any more; a turn stays in the store
            with self._catch_lock:   # (on_turn runs on several threads: LiveKit lanes)
                self.stats["dropped"] += item[0] != _TURN or self.store_path is None
                self._refused_backlog += 1
            return
        try:
            self._q.put_nowait(item)
        except queue.Full:
            durable = item[0] == _TURN and self.store_path is not None
            with self._catch_lock:   # on_turn runs on several threads (LiveKit lanes): counts included
                self.stats["queue_full"] += 1
                n = self.stats["queue_full"]
                if durable:
                    self._catch_up = True
                    if item[1].turn_id is not None:  # sent from the store once the queue has drained
                        self._catch_up_through = max(self._catch_up_through or 0, item[1].turn_id)
                else:
                    self.stats["dropped"] += 1
            if n == 1 or n % 100 == 0:
                log.warning("realtime session %s is falling behind: its queue is full (%d items, %d times "
                            "so far); %s", self.session_id, self._queue_size, n,
                            f"{what} stays in the meeting store and is sent when the session catches up"
                            if durable else f"{what} is dropped")
        self._kick()

    def _kick(self) -> None:
        if self._loop is not None and self._wake is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:
                pass  # the loop has just closed

    @property
    def refused(self) -> bool:
        """The provider refused the connection (:class:`SessionRefused`): nothing will be sent."""
        return isinstance(self.error, SessionRefused)

    @property
    def backlog(self) -> int:
        """Items queued or held that the session has not taken yet (and, once the provider refused
        the connection, every item given since: none will be)."""
        return self._q.qsize() + len(self._pending) + self._refused_backlog

    def close(self, timeout: float = 10.0) -> bool:
        """Send what is queued (for up to ``timeout`` seconds), then close the session: its close
        may take :data:`CLOSE_GRACE` seconds past the timeout, then its connection is aborted
        (:meth:`RealtimeSession.abort`), so no socket outlives this call.

        Returns:
            True when everything queued was delivered (what was not stays in the store); False
            too when the provider refused the connection (:attr:`refused`), even with nothing queued.
        """
        self._stopping = True
        self._deadline = time.monotonic() + timeout
        self._kick()
        if self._thread is not None:
            self._thread.join(timeout + 5.0)
        done = self.backlog == 0 and not self.refused   # (refused: not even the session's start was sent)
        if self.backlog:
            # what to run next depends on the caller (the CLI's closing line says it for each command)
            log.warning("realtime session %s closed with %d item(s) not sent; the committed turns stay in the "
                        "store", self.session_id, self.backlog)
            self._tell("unsent", f"closed with {self.backlog} item(s) not sent; the committed turns stay in the store")
        return done

    def _tell(self, kind: str, text: str) -> None:
        """Give ``on_event`` one of the broadcaster's own events (see the constructor)."""
        self._forward(SessionEvent(kind, text))

    def _forward(self, ev: SessionEvent) -> None:
        if self.on_event is not None:
            try:
                self.on_event(ev)
            except Exception:  # noqa: BLE001 - a callback never stops the broadcaster
                log.exception("realtime on_event callback failed")

    # --- the broadcaster's thread ----------------------------------------------------------
    def _run(self) -> None:
        """The broadcaster's thread: :meth:`_main` on its own loop. What it raises is kept in
        ``error`` and logged, never raised into the pipeline: an ``OSError`` (a session whose
        connect cannot open its file, e.g. a local session's log) as one ERROR line with its
        message, the traceback only when DEBUG logging is on (``--debug``); anything else with
        its traceback (a bug)."""
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except OSError as exc:   # a session's connect that cannot open its file (LocalSession's log), …
            self.error = exc     # one line; the traceback only with --debug
            log.error("realtime broadcaster %s stopped: %s", self.session_id, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))
        except BaseException as exc:  # noqa: BLE001 - reported, never raised into the pipeline
            self.error = exc
            log.exception("realtime broadcaster %s stopped", self.session_id)
        finally:
            self._loop.close()

    async def _main(self) -> None:
        if self.store_path is not None:
            self._log = DeliveryLog(self.store_path, self.session_id, self.meeting_id)
            self._sent_speakers = self._log.speakers()
        delay = self.backoff_initial
        try:
            while True:
                if self._stopping and time.monotonic() > self._deadline:
                    return
                try:
                    await self._within_close_deadline(self.session.connect())
                except SessionRefused as exc:   # a wrong key: every retry would be refused too
                    self.error = exc
                    log.error("realtime session %s: %s: the provider refused the connection (a wrong or revoked API "
                              "key, or no access to the model); not retrying, the turns stay in the store",
                              self.session_id, exc)
                    self._tell("refused", str(exc))
                    return
                except SessionClosed as exc:
                    if self._stopping and time.monotonic() > self._deadline:
                        return   # the close timeout passed during the connect: nothing to retry
                    log.warning("realtime session %s: %s; retrying in %.1f s", self.session_id, exc, delay)
                    self._tell("connect_failed", f"{exc}; retrying in {delay:.1f} s")
                    await self._sleep(delay)
                    delay = min(delay * 2, self.backoff_max)
                    continue
                if self.stats["connects"]:
                    self.stats["reconnects"] += 1
                self.stats["connects"] += 1
                self._attr = RealtimeAttribution(self.assistant_id, already_sent=self._sent_speakers,
                                                 reserved=self.reserved_names)
                self._dropped_conn = False
                self._accepted = 0
                self.connected.set()
                pump = asyncio.create_task(self._pump())
                try:
                    await self._feed()
                    return
                except SessionClosed as exc:
                    self._reply_lost = self._reply_lost or self.session.reply_owed
                    if self._accepted:   # a connection that worked: a new outage, not the same one
                        delay = self.backoff_initial
                    log.warning("realtime session %s dropped (%s); reconnecting in %.1f s",
                                self.session_id, exc, delay)
                    self._tell("dropped", f"{exc}; reconnecting in {delay:.1f} s")
                finally:
                    self.connected.clear()
                    pump.cancel()
                    try:
                        await pump
                    except (asyncio.CancelledError, Exception):  # noqa: BLE001
                        pass
                    try:
                        await self._within_close_deadline(self.session.close(), grace=CLOSE_GRACE)
                    except SessionClosed:
                        self.session.abort()   # no socket stays open past close()
                        log.warning("realtime session %s: the provider did not close in time; the "
                                    "connection was dropped", self.session_id)
                await self._sleep(delay)
                delay = min(delay * 2, self.backoff_max)
        finally:
            if self._log is not None:
                self._log.close()

    async def _within_close_deadline(self, coro, grace: float = 0.0):  # noqa: ANN001, ANN202
        """Await ``coro`` (a connect or close), but give it up with :class:`SessionClosed` once
        :meth:`close` was called and its timeout has passed (and ``grace`` seconds since it
        began): a server that never answers the handshake or the close cannot hold
        ``close(timeout)`` past its timeout (a close given up is followed by the session's
        ``abort``)."""
        task = asyncio.ensure_future(coro)
        grace_end = time.monotonic() + grace
        while not task.done():
            if self._stopping and time.monotonic() > max(self._deadline, grace_end):
                task.cancel()
                try:
                    await task
                except BaseException:  # noqa: BLE001 - cancelled or failed: given up either way
                    pass
                raise SessionClosed("given up: the close timeout passed")
            await asyncio.wait({task}, timeout=0.05)
        return task.result()

    async def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self._stopping and time.monotonic() > self._deadline:
                return
            await asyncio.sleep(min(0.05, end - time.monotonic()))

    async def _pump(self) -> None:
        async for ev in self.session.events():
            if ev.kind == "closed":
                self._dropped_conn = True
                assert self._wake is not None
                self._wake.set()
                return
            self._forward(ev)

    async def _feed(self) -> None:
        assert self._wake is not None
        first = True
        while True:
            if self._dropped_conn:
                raise SessionClosed("the provider closed the connection")
            # items leave the bounded queue only as far as they can be held: with a stalled
            # provider the queue fills and its full-queue policy applies, instead of an
            # unbounded backlog in memory
            while len(self._pending) < self._queue_size:
                try:
                    self._pending.append(self._q.get_nowait())
                except queue.Empty:
                    break
            if first and not self._earlier_sent and self._log is not None:
                # this run's first conversation, or a later one after a drop cut that resend short
                self._history.clear()
                await self._resend_earlier_run()
            elif first and self.stats["reconnects"] and self._history:
                await self._resend_history()
            with self._catch_lock:
                catch_up, self._catch_up = self._catch_up, False
            if first or catch_up:
                first = False
                # what the store holds from before the queued items: an instruction or a reply
                # request queued before a turn must not go after it
                queued = [p.turn_id for k, p in self._pending if k == _TURN and p.turn_id is not None]
                await self._send_from_store(before=min(queued) if queued else None)
                if self._reply_lost:  # asked for on the connection that dropped: ask the new one
                    self._reply_lost = False
                    await self._reply()
            while self._pending:
                kind, payload = self._pending[0]
                if kind == _TURN:
                    # (a turn without an id is not in the store: it is sent itself, as without one;
                    # a review found it sent by neither path, and close() still said all went)
                    if self._log is not None and payload.turn_id is not None:
                        # this turn and those committed before it that are not delivered yet
                        # (dropped from a full queue, or committed by another process)
                        await self._send_from_store(before=None if payload.turn_id is None else payload.turn_id + 1)
                    else:
                        await self._send_turn(payload)
                elif kind == _INSTRUCTION:
                    await self._within_close_deadline(self.session.send_instruction(payload), grace=CLOSE_GRACE)
                    self.stats["instructions"] += 1
                    # a new conversation after a drop is given it again, in its place (a review:
                    # the turns were resent after a reconnect, the instructions not)
                    self._history.append((payload, _INSTRUCTION_KEY, None, False))
                else:
                    await self._reply()
                self._pending.popleft()
            with self._catch_lock:
                through, self._catch_up_through = self._catch_up_through, None
            if through is not None:  # turns dropped from a full queue, after those queued
                await self._send_from_store(before=through + 1)
            if self._stopping and self._q.empty() and (
                    not self.session.reply_in_flight or time.monotonic() > self._deadline):
                await self._send_from_store()   # a last sweep: nothing committed stays unsent
                return  # a reply in flight is waited for (up to the close timeout)
            self._wake.clear()
            if self._q.empty() and not self._catch_up and not self._dropped_conn:
                try:
                    await asyncio.wait_for(self._wake.wait(), 0.5)
                except asyncio.TimeoutError:
                    pass

    async def _resend_history(self) -> None:
        """Send a new provider conversation (after a dropped connection) the items the old one
        had taken (application instructions too), as they were, in order, noted by :meth:`RealtimeAttribution.item_again` as the
        new conversation's own: the runtime note goes with the first labelled item of the new
        conversation (A3, A9: once per provider conversation), the item that carried it in the old
        one or, when that item is older than the history kept, the first labelled item resent;
        with it, who said the bare lines resent before it (and the first labelled line sent after
        the history says it, when the history holds only bare lines).

        The history becomes what the new conversation took only once every item went: a drop
        during the resend leaves it whole for the next conversation (an item the provider
        rejects is left out)."""
        assert self._attr is not None
        items = list(self._history)
        kept: list[tuple[dict[str, Any], str, SpeakerLabel | None, bool]] = []
        for item, key, label, labelled in items:
            if key == _INSTRUCTION_KEY:
                await self._within_close_deadline(self.session.send_instruction(item), grace=CLOSE_GRACE)
                kept.append((item, key, label, labelled))
                continue
            state = self._attr.snapshot()
            item = self._attr.item_again(item, label, labelled)
            try:
                await self._within_close_deadline(self.session.send_item(item, key), grace=CLOSE_GRACE)
            except ProviderError as exc:
                self._attr.restore(state)   # (its note, and its bare line, did not reach the session)
                log.error("realtime session %s rejected an item sent again after the reconnect (%s); "
                          "the others go on", self.session_id, exc)
                continue
            kept.append((item, key, label, labelled))
            self.stats["resent_after_reconnect"] += 1
        self._history.clear()
        self._history.extend(kept)
        log.info("realtime session %s: %d items of the meeting sent again to the new conversation",
                 self.session_id, len(kept))

    async def _resend_earlier_run(self) -> None:
        """A meeting that goes on (``voicekit mic --append --session …``): this run's provider
        conversation is new, so it is first sent the last turns an earlier run delivered to this
        session id (as many as ``history_on_reconnect``), rendered as now, so that the model
        knows the meeting so far; they are not delivered or asked a reply for again."""
        turns = self._log.delivered(self._history.maxlen or 0) if self._log is not None else []
        for turn in turns:
            await self._send_turn(turn, again=True)
            self.stats["resent_after_restart"] += 1
        self._earlier_sent = True   # (a drop before this line: the next conversation gets it all again)
        if turns:
            log.info("realtime session %s: %d turns an earlier run delivered sent to the new conversation",
                     self.session_id, len(turns))

    async def _send_from_store(self, before: int | None = None) -> None:
        """Send the store's undelivered turns, in commit order (only those with ids below
        ``before`` when given)."""
        if self._log is None:
            return
        for turn in self._log.undelivered(before):
            await self._send_turn(turn)

    async def _send_turn(self, turn: SpeakerTurn, again: bool = False) -> None:
        """Send one committed turn and record it; ``again``: a turn an earlier run delivered,
        sent to a new conversation for its context (not recorded, counted or replied to again)."""
        assert self._attr is not None
        role = turn_role(turn, self.assistant_id)
        if not is_speaker_turn(role):
            if self._log is not None and turn.turn_id is not None and not again:
                self._log.mark(turn.turn_id, SKIPPED)
            return
        state = self._attr.snapshot()
        if self.attribution:
            label = (self._log.label(turn, self.participants, self.assistant_id) if self._log is not None
                     and turn.turn_id is not None else None)
            if label is None:  # no store: this broadcaster's own register ranks every turn it sends
                if self._register is None:
                    self._register = MemoryRegister()
                label = self._register.record(turn, self.participants, assistant_id=self.assistant_id)
            item = self._attr.item(turn, label)
        else:
            label = None
            item = {"type": "message", "role": "user", "content": unlabelled_content(turn)}
        # a turn without an id (no store) is numbered: id(turn) is reused once a turn is freed
        key = f"vk-t{turn.turn_id}" if turn.turn_id is not None else f"vk-x{next(self._item_numbers)}"
        try:
            # bounded by close(timeout) as the connect and the close are: a provider that stops
            # acknowledging held close(1) for the 10 s ack timeout, its socket open (a review)
            await self._within_close_deadline(self.session.send_item(item, key), grace=CLOSE_GRACE)
        except ProviderError as exc:
            log.error("realtime session %s rejected turn %s (client event %s, code %s): %s",
                      self.session_id, turn.turn_id, exc.event_id, exc.code, exc)
            # the item never reached the session: neither its speaker nor its note counts
            self._attr.restore(state)
            if again:
                return
            if self._log is not None and turn.turn_id is not None:
                self._log.mark(turn.turn_id, REJECTED)
            self.stats["rejected"] += 1
            self.rejected_turns.append((turn.turn_id, turn.start))
            return
        if not again:
            self._accepted += 1   # progress: a turn delivered (history sent again is none)
            if self._log is not None and turn.turn_id is not None:
                self._log.mark(turn.turn_id, DELIVERED)
            self.stats["delivered"] += 1
        self._history.append((item, key, label, label is not None and self._attr.labelled))
        if label is not None and label.speaker_key not in {s.speaker_key for s in self._sent_speakers}:
            self._sent_speakers.append(label)
            if self._log is not None:
                self._log.save_speakers(self._sent_speakers)
        if self.reply_when is not None and self.reply_when(turn) and not again:
            await self._reply()

    async def _reply(self) -> None:
        self.stats["replies_requested"] += 1
        await self.session.request_reply()

