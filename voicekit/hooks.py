"""Hooks: user code that sees every speaker turn before it is committed.

One enum names the hook points (:class:`HookTrigger`). An ``ON_TRANSCRIPTION`` hook is a
callable, sync or async, taking the :class:`~voicekit.turns.SpeakerTurn` and returning:

- ``None``: keep the turn as it is;
- a :class:`~voicekit.turns.SpeakerTurn`: the edited turn (e.g. ``turn.replace(text=…)``);
- a :class:`HookResult`: rename (this turn, or with ``for_speaker=True`` every later turn of the
  same speaker), edit the text, or block the turn.

A hook script (``voicekit replay … --hook rename.py``) is a Python file that defines
``on_transcription(turn)`` with that contract. A hook that raises or runs past its timeout
(default 2 s) is logged with its name and the turn goes on unchanged: a broken hook never loses
a turn; that includes a hook that calls ``sys.exit()`` or raises ``KeyboardInterrupt`` or any
``BaseException`` itself (a hook cannot stop the meeting; a real Ctrl-C still does). So does
one that returns anything else (a string, a HookResult whose name or text is not a
str, a SpeakerTurn with broken fields): its result is ignored and recorded in ``failures``. A
hook that timed out is not called again until its hung call returns (its later turns are
recorded as skipped), so one hung hook costs one timeout, not one per turn. A hook that filters
what may be kept or sent (an "off the record" filter) should fail closed instead:
``HookRunner(on_failure="block")`` (``--hook-failure block``) blocks every turn a hook failed on.

Other triggers deliver an event to observers: an ``ON_SPEAK_DECISION`` hook receives each
turn-taking :class:`~voicekit.turntaking.Decision` (who answers a human turn, and on which rung
it was decided; see ``docs/turn-taking.md``), delivered by :meth:`HookRunner.emit` with the same
timeout and isolation. Connect a room with ``TurnTaker.attach_hooks(runner)``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import contextlib
import enum
import importlib.util
import inspect
import logging
import os
import re
import queue
import sys
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voicekit._checks import is_finite_real
from voicekit.attribution.labels import display_name
from voicekit.turns import SpeakerTurn, Word, label_read_in, metadata_json

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _script_folder_importable(path: Path):
    """Make ``path``'s folder importable, as ``python path`` does: first in ``sys.path`` while the
    block runs (the script's own imports), then at its end (a hook's imports at run time), where
    no file of that folder can shadow an installed module imported later by voicekit or a library. A folder
    already on ``sys.path`` (the current one under ``python -m``, or a hook's loaded before) is
    left where it is; a script that fails to load leaves ``sys.path`` as it was."""
    folder = str(path.resolve().parent)
    on_path = {os.path.realpath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)}
    if folder in on_path:
        yield
        return
    sys.path.insert(0, folder)
    importlib.invalidate_caches()   # a sibling written a moment ago is found
    try:
        yield
    finally:
        if folder in sys.path:   # (unless the script took it out itself)
            sys.path.remove(folder)
    sys.path.append(folder)   # loaded: its imports at run time; a script that failed to load leaves nothing


class HookTrigger(enum.Enum):
    """The points where hooks run."""

    ON_TRANSCRIPTION = "on_transcription"
    """Every speaker turn, before it is committed to the store."""

    ON_SPEAK_DECISION = "on_speak_decision"
    """Every turn-taking decision (``voicekit.turntaking.Decision``): which AI members answer a
    human turn, in order, or nobody, and how it was decided (``decided_by``: mention,
    group_address, continuation, director, fallback, silence). Observers only: the return value
    is ignored. Delivered with :meth:`HookRunner.emit`."""


@dataclass(frozen=True)
class HookResult:
    """What an ``ON_TRANSCRIPTION`` hook decides.

    Attributes:
        name: a new speaker name (``sender_name``), or None to keep it.
        for_speaker: apply ``name`` to every later turn of the same speaker label too.
        text: new text, or None to keep it. It is made one line (each run of line breaks and
            control characters becomes one space; every other character is kept, joiners
            included): a turn is one line of the ``.txt`` and one cue's text in the subtitles.
            So is a returned SpeakerTurn's edited text.
        block: drop the turn: it is not committed, stored or sent.
    """

    name: str | None = None
    for_speaker: bool = False
    text: str | None = None
    block: bool = False

    @classmethod
    def rename(cls, name: str, for_speaker: bool = True) -> "HookResult":
        """Rename the speaker (by default for this and every later turn of the same speaker)."""
        return cls(name=name, for_speaker=for_speaker)

    @classmethod
    def blocked(cls) -> "HookResult":
        """Block the turn."""
        return cls(block=True)


class HookError(Exception):
    """A hook script cannot be loaded. The message names the fix."""


@dataclass
class _Hook:
    name: str
    fn: Callable[..., Any]
    running: Any = None  # the future of a call that timed out and has not finished yet
    worker: "_Worker | None" = None  # the thread a sync hook runs in
    interrupted: Any = None  # (payload, future) of a call whose wait an interrupt broke off


class _StillRunning(Exception):
    """The hook's previous call has not returned: it is skipped instead of queued behind it."""


ON_FAILURE = ("keep", "block")
"""What :class:`HookRunner` does with a turn a hook failed on: keep it as it was, or block it."""


class HookRunner:
    """Run the registered hooks on each turn, in registration order.

    Args:
        timeout: seconds a hook may run before it is abandoned (default 2.0).
        on_failure: what a turn becomes when an ``ON_TRANSCRIPTION`` hook fails on it (raises,
            times out, is skipped while its previous call runs, or returns what cannot be
            applied): ``"keep"`` (default) goes on without that hook's change, ``"block"``
            blocks the turn (:meth:`run` returns None), for a hook that filters what may be kept
            or sent, which must not let a turn through when it breaks. A hook whose result is
            applied but for a refused name does not count as failed.

    Raises:
        ValueError: ``timeout`` is not a positive finite number of seconds, or ``on_failure`` is
            neither ``"keep"`` nor ``"block"``.

    Attributes:
        names: persistent renames, speaker label -> name (``--speaker-names`` and hooks' renames
            ``for_speaker``), as the store keeps them. Applied to every turn before hooks run: a
            name from :meth:`set_names` on every channel, a hook's rename only on the channel
            of the turn it was given for (in a LiveKit room two participants may share a display
            name, which is their lanes' label).
        failures: ``(hook name, turn start, reason)`` of every hook that failed or timed out;
            for an event without a start time (a speak decision) the start is None.
    """

    def __init__(self, timeout: float = 2.0, on_failure: str = "keep") -> None:
        if not (is_finite_real(timeout) and timeout > 0):
            raise ValueError(f"HookRunner timeout is the seconds a hook may run, a positive number, got {timeout!r}")
        if on_failure not in ON_FAILURE:
            raise ValueError(f"HookRunner on_failure is one of {', '.join(map(repr, ON_FAILURE))}, got {on_failure!r}")
        self.timeout = float(timeout)
        self.on_failure = on_failure
        self._hooks: dict[HookTrigger, list[_Hook]] = {t: [] for t in HookTrigger}
        self.names: dict[str, str] = {}
        self._given: dict[str, str] = {}  # set_names: label -> name, on every channel
        self._renamed: dict[tuple[str, str], str] = {}  # a hook's for_speaker rename: (channel, label) -> name
        self.failures: list[tuple[str, float, str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._resume: tuple[SpeakerTurn, int, SpeakerTurn] | None = None  # see run()

    def register(self, fn: Callable[..., Any], trigger: HookTrigger | str = HookTrigger.ON_TRANSCRIPTION,
                 name: str | None = None) -> None:
        """Register a sync or async callable on a trigger (a :class:`HookTrigger` or its value,
        ``"on_transcription"``, ``"on_speak_decision"``).

        Raises:
            ValueError: for a trigger that is neither.
            TypeError: ``fn`` is not callable, or cannot be called with one argument (the turn,
                or the decision).
        """
        trigger = HookTrigger(trigger)
        name = name or getattr(fn, "__qualname__", repr(fn))
        if not callable(fn):
            raise TypeError(f"hook {name}: a hook is a function of one argument, def {trigger.value}("
                            f"{_ARGUMENT[trigger]}): …, not {type(fn).__name__}")
        if not _takes_one_argument(fn):
            raise TypeError(f"hook {name}: it must take one argument, def {trigger.value}({_ARGUMENT[trigger]}): …")
        self._hooks[trigger].append(_Hook(name, fn))

    def registered(self, trigger: HookTrigger) -> list[str]:
        """The names of the hooks registered on ``trigger``, in order."""
        return [hook.name for hook in self._hooks[trigger]]

    def set_names(self, names: dict[str, str]) -> None:
        """Persistent renames, e.g. ``{"Speaker A": "Diane"}``, on every channel.

        Raises:
            TypeError: a label or a name that is not text (``{1: "Dana"}``).
            ValueError: a name of more than one line or with a control character, a name or label
                that is not UTF-8 text (a lone surrogate), or a name that is another speaker's
                label (``{"Speaker A": "Speaker B"}``: the outputs would show two speakers as
                one); nothing is set then.
        """
        given = checked_speaker_names(names)
        self._given.update(given)
        self.names.update(given)

    def load_script(self, path: str | Path) -> None:
        """Register the hooks a hook script defines: ``on_transcription(turn)`` on
        ``ON_TRANSCRIPTION``, ``on_speak_decision(decision)`` on ``ON_SPEAK_DECISION`` (one or both;
        a function's name is its trigger's value).

        The script's own folder is importable, as under ``python script.py``: ``from helpers
        import NAMES`` finds ``helpers.py`` beside it. While the script loads, the folder comes
        first in ``sys.path`` (a sibling wins over an installed module of the same name, as with
        ``python script.py``); afterwards it stays at the end of ``sys.path``, so imports the hook
        makes when it runs still find its siblings but a file in that folder never shadows an
        installed module that voicekit or a library imports later (it can stand in for one that
        is not installed). A folder already on ``sys.path`` is
        left where it is.

        Raises:
            HookError: missing file, a folder, a file that is not ``.py``, a script that fails to
                import, one that defines neither function, or one whose function does not take
                exactly one argument.
        """
        path = Path(path)
        if path.is_dir():
            raise HookError(f"hook script {path} is a folder; pass a Python file that defines on_transcription(turn)")
        if not path.is_file():
            raise HookError(f"hook script {path} not found; pass a Python file that defines on_transcription(turn)")
        if path.suffix.lower() in (".yaml", ".yml", ".json"):
            raise HookError(f"hook script {path} is not a Python file: a members file (AI members, "
                            f"docs/turn-taking.md) goes to --members {path}; a hook script is a .py file")
        if path.suffix != ".py":
            raise HookError(f"hook script {path} is not a Python file: a hook script's name ends in .py (rename "
                            f"it), and a names file (one 'Speaker A = Diane' per line) goes to --speaker-names {path}")
        spec = importlib.util.spec_from_file_location(f"voicekit_hook_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        # in sys.modules while it runs, as an imported module is: @dataclass, typing.get_type_hints
        # and pickle look a class's module up there (a hooks review: a @dataclass failed to load)
        sys.modules[spec.name] = module
        try:
            with _script_folder_importable(path):
                spec.loader.exec_module(module)  # type: ignore[union-attr]
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - sys.exit() at import is a failed load too
            sys.modules.pop(spec.name, None)
            raise HookError(f"hook script {path} failed to load: {_reason(exc)}") from exc
        found = [(trigger, fn) for trigger in HookTrigger
                 if callable(fn := getattr(module, trigger.value, None))]
        misspelt = _misspelt_triggers(module)
        if not found:
            raise HookError(f"hook script {path} defines no on_transcription(turn) function "
                            "(nor on_speak_decision(decision))"
                            + "".join(f"; it defines {name}: did you mean {want}?" for name, want in misspelt))
        for name, want in misspelt:
            log.warning("hook script %s defines %s, which no trigger calls: did you mean %s?", path, name, want)
        for trigger, fn in found:
            if not _takes_one_argument(fn):
                raise HookError(f"hook script {path}: {trigger.value} must take one argument, "
                                f"def {trigger.value}({_ARGUMENT[trigger]}): …")
        for trigger, fn in found:   # all checked first: a script is loaded whole or not at all
            self.register(fn, trigger, name=f"{path.name}:{trigger.value}")

    def _call(self, hook: _Hook, payload: Any) -> Any:
        future = None
        if hook.interrupted is not None:
            # the pipeline retries a turn after an interrupt: the hook's call for it goes on
            # (a hook is never called twice for one turn); one for another payload counts as running
            earlier, pending = hook.interrupted
            hook.interrupted = None
            if earlier == payload:
                future = pending
            elif not pending.done():
                hook.running = pending
        if future is None:
            future = self._submit(hook, payload)
        try:
            return future.result(self.timeout)
        except concurrent.futures.TimeoutError:
            hook.running = future  # a hung hook is not called again until it returns
            raise
        except BaseException:
            if not future.done():  # KeyboardInterrupt while waiting: the call goes on
                hook.interrupted = (payload, future)
            raise

    def _submit(self, hook: _Hook, payload: Any) -> concurrent.futures.Future:
        if hook.running is not None:
            if not hook.running.done():
                raise _StillRunning
            hook.running = None
        if _is_async(hook.fn):
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(target=_serve_loop, args=(self._loop,),
                                                     name="voicekit-hook-loop", daemon=True)
                self._loop_thread.start()
            future = asyncio.run_coroutine_threadsafe(_awaited(hook.fn, payload), self._loop)
        else:
            if hook.worker is None:
                hook.worker = _Worker(f"voicekit-hook-{hook.name}")
            future = hook.worker.submit(hook.fn, payload)
        return future

    def hooks_for(self, trigger: HookTrigger) -> list[str]:
        """The names of the hooks registered on ``trigger``, in order."""
        return [h.name for h in self._hooks[trigger]]

    def emit(self, trigger: HookTrigger, payload: Any) -> list[Any]:
        """Deliver ``payload`` to every hook registered on ``trigger`` (not ``ON_TRANSCRIPTION``).

        Each hook is called in registration order with the same timeout and isolation as
        :meth:`run`: one that raises or runs past ``timeout`` is logged and recorded in
        ``failures``, and the next hook still runs. Never raises for a hook's failure.

        Returns:
            The return values of the hooks that completed, in order.

        Raises:
            ValueError: for ``ON_TRANSCRIPTION``, whose hooks edit turns: use :meth:`run`.
        """
        if trigger is HookTrigger.ON_TRANSCRIPTION:
            raise ValueError("ON_TRANSCRIPTION hooks edit turns: call HookRunner.run(turn)")
        results: list[Any] = []
        for hook in self._hooks[trigger]:
            try:
                results.append(self._call(hook, payload))
            except _StillRunning:
                self._fail_event(hook, trigger, payload, "skipped: its previous call has not returned")
            except concurrent.futures.TimeoutError:
                self._fail_event(hook, trigger, payload, f"timed out after {self.timeout:g} s")
            except Exception as exc:  # noqa: BLE001 - a broken hook never breaks the room
                self._fail_event(hook, trigger, payload, _reason(exc), exc)
        return results

    def _fail_event(self, hook: _Hook, trigger: HookTrigger, payload: Any, reason: str,
                    exc: BaseException | None = None) -> None:
        start = getattr(payload, "start", None)
        self.failures.append((hook.name, start if isinstance(start, (int, float)) else None, reason))
        log.warning("%s hook %s failed (%s); ignored", trigger.value, hook.name, reason)
        _log_traceback(hook, exc)

    def run(self, turn: SpeakerTurn) -> SpeakerTurn | None:
        """Apply persistent names, then every ``ON_TRANSCRIPTION`` hook.

        A Ctrl-C (KeyboardInterrupt in the main thread, while the runner waits for a hook)
        propagates; one the hook's own code raises is that hook's failure. When the same turn is
        run again (the pipeline retries it), the hooks that had returned are not called again
        and the interrupted hook's call is waited for rather than made twice.

        Returns:
            the turn to commit, or None when a hook blocked it (or failed on it, with
            ``on_failure="block"``).
        """
        received, first = turn, 0
        if self._resume is not None and self._resume[0] == received:
            first, turn = self._resume[1], self._resume[2]
        else:
            name = self._renamed.get((turn.channel, turn.speaker)) or self._given.get(turn.speaker)
            if name is not None:
                turn = turn.replace(metadata={**turn.metadata, "sender_name": name})
        self._resume = None
        hooks = self._hooks[HookTrigger.ON_TRANSCRIPTION]
        for i in range(first, len(hooks)):
            hook = hooks[i]
            try:
                # a copy: a hook that edits the turn's metadata in place (its role, its name) would
                # get past every check below, and change what the caller holds (a hooks review)
                result = self._call(hook, turn.replace(metadata=copy.deepcopy(turn.metadata)))
            except (KeyboardInterrupt, SystemExit):
                self._resume = (received, i, turn)
                raise
            except _StillRunning:
                if self._failed(hook, turn, "skipped: its previous call has not returned"):
                    return None
                continue
            except concurrent.futures.TimeoutError:
                if self._failed(hook, turn, f"timed out after {self.timeout:g} s"):
                    return None
                continue
            except Exception as exc:  # noqa: BLE001 - a broken hook never loses a turn (unless told to block it)
                if self._failed(hook, turn, _reason(exc), exc=exc):
                    return None
                continue
            if result is None:
                continue
            result, problem = _checked(result, turn)
            if problem:
                if self._failed(hook, turn, problem):
                    return None
                continue
            if isinstance(result, SpeakerTurn):
                name = result.metadata.get("sender_name")
                bad = _bad_name(turn.speaker, name) if name != turn.metadata.get("sender_name") else None
                if bad:   # as for a HookResult: only the name is refused, the rest of the edit holds
                    self._fail(hook, turn, bad, kept="its name is not used")
                    kept = {k: v for k, v in result.metadata.items() if k != "sender_name"}
                    if turn.metadata.get("sender_name") is not None:
                        kept["sender_name"] = turn.metadata["sender_name"]
                    result = result.replace(metadata=kept)
                turn = result if result.text == turn.text else result.replace(text=_one_line_text(result.text))
            elif isinstance(result, HookResult):
                if result.block:
                    log.info("hook %s blocked the turn at %.2f s", hook.name, turn.start)
                    return None
                bad = _bad_name(turn.speaker, result.name)
                if bad:  # only the name is refused: a redaction or a block in the result still holds
                    self._fail(hook, turn, bad, kept="its name is not used")
                elif result.name is not None:
                    turn = turn.replace(metadata={**turn.metadata, "sender_name": result.name.strip()})
                    if result.for_speaker:
                        self._renamed[(turn.channel, turn.speaker)] = result.name.strip()
                        self.names[turn.speaker] = result.name.strip()
                if result.text is not None:   # one line: a turn is one line of the .txt, one cue text
                    turn = turn.replace(text=_one_line_text(result.text))
        return turn

    def _failed(self, hook: _Hook, turn: SpeakerTurn, reason: str, exc: BaseException | None = None) -> bool:
        """Record that ``hook`` failed on ``turn``; True when the turn is to be blocked for it
        (``on_failure="block"``)."""
        block = self.on_failure == "block"
        self._fail(hook, turn, reason, exc=exc,
                   kept="the turn is blocked (on_failure='block', --hook-failure block)" if block
                   else "the turn goes on without this hook's change")
        return block

    def _fail(self, hook: _Hook, turn: SpeakerTurn, reason: str,
              kept: str = "the turn goes on without this hook's change", exc: BaseException | None = None) -> None:
        self.failures.append((hook.name, turn.start, reason))
        log.warning("hook %s failed on the turn at %.2f s (%s); %s", hook.name, turn.start, reason, kept)
        _log_traceback(hook, exc)

    def close(self) -> None:
        """Stop the async hooks' event loop; hooks still running are abandoned (their threads
        are daemon threads: a hook that never returns does not keep the process alive). An async
        hook still awaiting is cancelled, waited for up to :data:`CLOSE_SECONDS` in all (asyncio
        would otherwise log "Task was destroyed but it is pending!" at exit). The runner still
        works after it: a later async hook starts a new loop."""
        loop, self._loop = self._loop, None
        thread, self._loop_thread = self._loop_thread, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None and thread is not threading.current_thread():
                thread.join(CLOSE_SECONDS)   # a hook blocking the loop itself: abandoned after that
            for hook in (h for hooks in self._hooks.values() for h in hooks if _is_async(h.fn)):
                hook.running = hook.interrupted = None  # calls on the stopped loop never finish


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine to await: an ``async def`` function, or an object
    whose ``__call__`` is one (a hooks review: such an object's rename was never awaited)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


class _HookRaised(Exception):
    """A hook raised what is not an ``Exception``: ``SystemExit`` (``sys.exit()`` in a hook
    script), ``KeyboardInterrupt``, ``GeneratorExit``, ``asyncio.CancelledError`` (from a sync
    hook) or a ``BaseException`` subclass of its own. Raised by the hook's code in the hook's own
    thread, it is a failure of that hook, never a request to stop the meeting: a real Ctrl-C is
    delivered to the main thread, where it interrupts the runner's wait and propagates (the
    pipeline retries the turn). The message is the logged reason, the hook's exception its
    ``__cause__``."""


class _Worker:
    """The daemon thread one sync hook runs in, its calls in order. One thread per hook, for the
    hook's whole life: a hook may keep per-thread resources (a sqlite3 connection). A daemon
    thread, because a thread pool's workers are joined at interpreter exit: a hook that never
    returned kept a finished ``voicekit replay`` from exiting. (A hung call is not queued behind:
    the runner skips the hook until the call returns.)"""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=name, daemon=True).start()

    def submit(self, fn: Callable[[Any], Any], payload: Any) -> concurrent.futures.Future:
        """Queue one call; the future holds its result or exception."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._calls.put((future, fn, payload))
        return future

    def _serve(self) -> None:
        while True:
            future, fn, payload = self._calls.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(_called(fn, payload))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                future.set_exception(exc)
            # while the thread waits for the next call, it holds nothing of this one: the caller
            # re-raised a failure through the future, which put the pipeline's frames (and the
            # capture's resampler) in its traceback; a daemon thread's frame is never freed at
            # exit, and nanobind then reported the resampler as leaked
            del future, fn, payload


CLOSE_SECONDS = 1.0
"""How long :meth:`HookRunner.close` waits for the async hooks still running to end once cancelled."""


def _serve_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The async hooks' loop thread: run until :meth:`HookRunner.close` stops it, cancel the
    hooks still awaiting (waiting for them up to :data:`CLOSE_SECONDS`), then close it."""
    loop.run_forever()
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=CLOSE_SECONDS))
    loop.close()


def _called(fn: Callable[[Any], Any], payload: Any) -> Any:
    """Call a sync hook in its thread; whatever it raises that is not an ``Exception`` (its own
    ``sys.exit()``, a ``KeyboardInterrupt`` it raised) becomes :class:`_HookRaised`, its failure."""
    try:
        return fn(payload)
    except Exception:
        raise
    except BaseException as exc:  # noqa: BLE001 - raised by the hook's code: no Ctrl-C lands in this thread
        raise _HookRaised(_reason(exc)) from exc


async def _awaited(fn: Callable[[Any], Any], payload: Any) -> Any:
    """Await an async hook on the hooks' loop; whatever it raises that is not an ``Exception``
    becomes :class:`_HookRaised`, its failure (left as it is, a ``SystemExit`` or a
    ``KeyboardInterrupt`` would also stop the loop that every async hook runs on). A cancellation
    stays one: :meth:`HookRunner.close` cancels the hooks still awaiting, and a hook that raised
    ``CancelledError`` itself fails as a cancelled call."""
    try:
        return await fn(payload)
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # noqa: BLE001 - raised by the hook's code, on the hooks' loop thread
        raise _HookRaised(_reason(exc)) from exc


def _log_traceback(hook: _Hook, exc: BaseException | None) -> None:
    """The traceback of a hook that raised, at DEBUG (``--debug`` shows it): the WARNING line
    names the exception, this shows the line of the hook's code that raised it. A timeout, a
    skipped call, an invalid result or a ``sys.exit()`` has no traceback."""
    if isinstance(exc, _HookRaised):
        exc = None if isinstance(exc.__cause__, SystemExit) else exc.__cause__
    if exc is not None:
        log.debug("traceback of hook %s:", hook.name, exc_info=exc)


_ARGUMENT = {HookTrigger.ON_TRANSCRIPTION: "turn", HookTrigger.ON_SPEAK_DECISION: "decision"}
"""The argument each trigger calls its hooks with, as the error messages name it."""


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` can be called with one positional argument (a callable without a signature
    to read, a builtin, is taken as it is)."""
    try:
        inspect.signature(fn).bind(None)
    except TypeError:
        return False
    except ValueError:
        return True
    return True


def _misspelt_triggers(module: Any) -> list[tuple[str, str]]:
    """The functions a hook script defines whose names are near a trigger's but are none
    (``on_transcripton``): ``(name, trigger name)`` pairs, by :func:`difflib.get_close_matches`."""
    import difflib

    triggers = [t.value for t in HookTrigger]
    pairs = []
    for name, fn in vars(module).items():
        if (name in triggers or not callable(fn) or getattr(fn, "__module__", None) != module.__name__
                or name.startswith(tuple(triggers))):   # a helper of a hook: on_transcription_impl
            continue
        close = difflib.get_close_matches(name, triggers, n=1, cutoff=0.85)
        if close:
            pairs.append((name, close[0]))
    return pairs


def _reason(exc: BaseException) -> str:
    """How a hook's failure is logged: ``ValueError: …``, or ``called sys.exit(3)``. An exception
    whose message cannot be read (its ``__str__`` raises) is named by its type."""
    try:
        if isinstance(exc, _HookRaised):
            return str(exc)
        if isinstance(exc, SystemExit):
            return f"called sys.exit({exc.code!r})" if exc.code is not None else "called sys.exit()"
        return f"{type(exc).__name__}: {exc}"
    except Exception as failed:  # noqa: BLE001 - the hook's own __str__ or __repr__ raised
        return f"{type(exc).__name__} (its message could not be read: {type(failed).__name__})"


_BREAKS = re.compile(r"[ \t]*[\x00-\x1f\x7f-\x9f\u2028\u2029][\s\x00-\x1f\x7f-\x9f\u2028\u2029]*")


def _one_line_text(text: str) -> str:
    """A hook's edited text as one line: each run of line breaks and control characters (C0,
    DEL, C1, U+2028/2029), with the blanks around it, becomes one space. Joiners (ZWJ, ZWNJ),
    bidi marks and the text's own spacing are kept: they spell words ("می\u200cخواهم")."""
    return _BREAKS.sub(" ", text)


_NOT_UTF8 = ("is not UTF-8 text (it holds a lone surrogate, as os.fsdecode or errors='surrogateescape' "
             "make of bytes that are not UTF-8: decode them with their own encoding)")


def _plain(x: Any) -> str | None:
    """``x`` as a plain ``str`` when it is a str, else None. A str subclass (numpy's ``np.str_``)
    is read as the characters it holds: none of its own methods (``strip``, ``__str__``) runs."""
    return str.__str__(x) if isinstance(x, str) else None


def _utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8, as the store and every output write it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _checked(result: Any, turn: SpeakerTurn) -> tuple[Any, str | None]:
    """A hook's return value as it is applied to ``turn``, with its strings made plain ``str``
    (:func:`_plain`) and its times and probabilities ``float`` (the store and the JSON cannot take
    a numpy number as it is); or None and why it cannot be applied.

    Refused: anything but a HookResult or a SpeakerTurn; a HookResult whose name or text is not a
    str, whose text is not UTF-8, or whose block is not a bool; a SpeakerTurn whose text
    or words' texts and labels are not UTF-8 str, whose times are not finite seconds (or end
    before they start), whose words are not Word records with such times and a probability in
    [0, 1], whose metadata is not a dict the store keeps as JSON
    (:func:`voicekit.turns.metadata_json`: str keys, no NaN, nothing that holds itself), whose
    ``sender_name`` is not a str, or which changes the ``speaker`` label (the diarizer's), the
    ``channel`` (where the turn came from), ``metadata["role"]`` or ``["agent_id"]`` (who produced
    it: a hook cannot make a person's speech an instruction or a model's reply) or
    ``emitted_at`` (voicekit's measure of when the turn went out). A name is checked apart
    (:func:`_bad_name`): a bad one drops only the name. A value whose fields cannot even be read
    (a comparison or ``str()`` of the hook's own type raising) is refused too."""
    try:
        return _checked_fields(result, turn)
    except Exception as exc:  # noqa: BLE001 - the hook's own types: a failure of the hook, never of the meeting
        return None, f"returned {type(result).__name__} that cannot be read ({_reason(exc)})"


def _checked_fields(result: Any, turn: SpeakerTurn) -> tuple[Any, str | None]:
    if isinstance(result, HookResult):
        name, text = _plain(result.name), _plain(result.text)
        for field_name, value, plain in (("name", result.name, name), ("text", result.text, text)):
            if value is not None and plain is None:
                return None, f"returned HookResult({field_name}={value!r}); {field_name} must be a str or None"
        if text is not None and not _utf8(text):
            return None, f"returned HookResult(text={text!r}), which {_NOT_UTF8}"
        if not isinstance(result.block, bool):
            return None, f"returned HookResult(block={result.block!r}); block must be True or False"
        return HookResult(name=name, for_speaker=bool(result.for_speaker), text=text, block=result.block), None
    if not isinstance(result, SpeakerTurn):
        hint = ""
        if isinstance(result, (bool, str)):   # "return False" to block, "return 'Diane'" to rename
            hint = ("; to block the turn return HookResult.blocked(), to rename its speaker "
                    "HookResult.rename('Diane'), to keep it as it is None")
        return None, f"returned {type(result).__name__}; expected None, a SpeakerTurn or a HookResult{hint}"
    text, speaker, channel = _plain(result.text), _plain(result.speaker), _plain(result.channel)
    if text is None or not speaker:
        return None, "returned a SpeakerTurn whose text or speaker is not a str"
    if not _utf8(text):
        return None, f"returned a SpeakerTurn whose text {_NOT_UTF8}"
    if speaker != turn.speaker:
        return None, (f"changed the speaker label {turn.speaker} to {speaker!r}: the label is the diarizer's; "
                      "rename with sender_name or HookResult.rename")
    if not all(is_finite_real(x) for x in (result.start, result.end)) or result.end < result.start:
        return None, f"returned a SpeakerTurn with times {result.start!r}..{result.end!r}"
    if not isinstance(result.words, (tuple, list)) or not all(
            isinstance(w, Word) and isinstance(w.text, str) and (w.speaker is None or isinstance(w.speaker, str))
            for w in result.words):
        return None, "returned a SpeakerTurn whose words are not Word records"
    words = tuple(Word(w.start, w.end, _plain(w.text), w.probability, _plain(w.speaker)) for w in result.words)
    if not all(_utf8(w.text) and _utf8(w.speaker or "") for w in words):
        return None, f"returned a SpeakerTurn whose words hold a text or label that {_NOT_UTF8}"
    bad = next((w for w in words if not (is_finite_real(w.start) and is_finite_real(w.end)) or w.end < w.start), None)
    if bad is not None:   # the store and the JSON take finite seconds only (NaN is not JSON)
        return None, f"returned a SpeakerTurn with the word {bad.text!r} at {bad.start!r}..{bad.end!r}"
    bad = next((w for w in words if not (is_finite_real(w.probability) and 0 <= w.probability <= 1)), None)
    if bad is not None:   # (a mean of probabilities of 1e308 overflowed to inf in the JSON's confidence)
        return None, (f"returned a SpeakerTurn with the word {bad.text!r} of probability {bad.probability!r}; "
                      "a probability is a number in [0, 1]")
    if channel != turn.channel:
        return None, (f"changed the channel {turn.channel!r} to {result.channel!r}: the channel is where the turn "
                      "came from, and a nameless speaker is labelled by it (@mic); rename with sender_name or "
                      "HookResult.rename")
    if not isinstance(result.metadata, dict):
        return None, "returned a SpeakerTurn whose metadata is not a dict"
    metadata = dict(result.metadata)
    changed = next((k for k in _SOURCE_KEYS if metadata.get(k) != turn.metadata.get(k)), None)
    if changed is not None:
        return None, (f"changed metadata[{changed!r}] from {turn.metadata.get(changed)!r} to {metadata.get(changed)!r}: "
                      "it says who produced the turn (a person, the assistant, the application), and a person's "
                      "speech cannot be made an instruction or a model's reply")
    name = metadata.get("sender_name")
    if name is not None:
        if _plain(name) is None:
            return None, f"returned a SpeakerTurn with sender_name {name!r}; it must be a str"
        metadata["sender_name"] = _plain(name)   # (checked as a name by the caller: _bad_name)
    try:
        metadata_json(metadata).encode("utf-8")
    except (TypeError, ValueError) as exc:   # UnicodeEncodeError included
        return None, f"returned a SpeakerTurn whose metadata the store cannot keep as JSON ({_reason(exc)})"
    if result.emitted_at != turn.emitted_at:
        return None, (f"changed emitted_at {turn.emitted_at!r} to {result.emitted_at!r}: it is voicekit's "
                      "measure of when the turn went out (edit the turn given: turn.replace(…))")
    words = tuple(Word(float(w.start), float(w.end), w.text, float(w.probability), w.speaker) for w in words)
    return SpeakerTurn(speaker=speaker, text=text, start=float(result.start), end=float(result.end), words=words,
                       channel=channel, metadata=metadata, turn_id=turn.turn_id, emitted_at=turn.emitted_at), None


# metadata a hook cannot change: what kind of source produced the turn (voicekit.attribution's
# turn_role: a person, this assistant, another agent, an application instruction, a runtime event)
_SOURCE_KEYS = ("role", "agent_id")


# a label written like a diarization label ("speaker a", "Speaker_A", "SPEAKER  B"): the spelling
# voicekit.turns.speaker_label gives is checked; any other label (a LiveKit participant's name) is kept
_DIARIZATION_LIKE = re.compile(r"speaker[\s_]+([a-z]{1,2})", re.IGNORECASE)


def _bad_name(label: str, name: str | None) -> str | None:
    """Why a hook's rename of the speaker ``label`` to ``name`` is refused (None when it is not,
    or when there is no rename): a blank name, one of more than one line or with a control
    character (``\\x1b``, ``\\x07``: the outputs are plain text), one that shows nothing in a
    label (``@``, a zero-width space), or another speaker's label."""
    problem = _name_problem(label, name)
    if problem is None:
        return None
    if problem == _NOT_ONE_LINE:
        return f"renamed {label} to {name!r}: {problem} (None keeps the speaker's name)"
    return f"renamed {label} to {name.strip()!r}: {problem}"


_NOT_ONE_LINE = "a name is one line of plain text, without control characters"


def checked_speaker_names(names: dict[str, str]) -> dict[str, str]:
    """Speaker names as :meth:`HookRunner.set_names` and ``voicekit export --speaker-names`` take
    them: label -> name, both stripped, entries with an empty label or name left out.

    Raises:
        TypeError: a label or a name that is not text (``{1: "Dana"}``).
        ValueError: a name of more than one line or with a control character, a name or label
            that is not UTF-8 text (a lone surrogate), a name that shows nothing once its
            invisible characters are left out, or a name that is another speaker's label
            (``{"Speaker A": "Speaker B"}``: the outputs would show two speakers as one).
    """
    for label, name in names.items():
        if not isinstance(label, str) or not isinstance(name, str):
            raise TypeError(f"set_names takes text labels and names, {{'Speaker A': 'Diane'}}, got "
                            f"{label!r}: {name!r}")
    given = {k.strip(): v.strip() for k, v in names.items() if k.strip() and v.strip()}
    for label, name in given.items():
        problem = _name_problem(label, name) or (None if _utf8(label) else f"the label {_NOT_UTF8}")
        if problem:
            raise ValueError(f"the name {name!r} for {label}: {problem}")
    return given


def _name_problem(label: str, name: str | None) -> str | None:
    """What is wrong with ``name`` for the speaker ``label`` (see :func:`_bad_name`), or None."""
    if name is None:
        return None
    if not name.strip() or len(name.strip().splitlines()) > 1 \
            or any(unicodedata.category(c) == "Cc" for c in name.strip()):
        return _NOT_ONE_LINE
    if not _utf8(name):
        return f"the name {_NOT_UTF8}"
    if not display_name(name):
        return ("it shows nothing once its invisible characters and leading '@' signs are left out (as a model "
                "reads it: voicekit.attribution.display_name), so the speaker would read as the channel, @mic; "
                "give a person's name")
    return _label_clash(label, name)


def _label_clash(label: str, name: str | None) -> str | None:
    """Why ``name`` cannot be given to the speaker ``label`` (None when it can): it is spelled like
    another diarization label (``Speaker B``, ``speaker_b``), so the outputs, which write names in
    place of labels, would merge two speakers."""
    read = label_read_in(name)
    if read is None or (read == label and (name or "").strip() == label):
        return None
    if read == label:
        return (f"that is this speaker's own label ({label}) spelled another way; leave the name out to keep "
                "the label, or give a person's name")
    return "that is another speaker's label, so the outputs would show two speakers as one; give a person's name"


_COMMENT = re.compile(r"\s#(?:\s|$)")


def parse_speaker_names(text: str, lines: bool | None = None) -> dict[str, str]:
    """Parse ``"Speaker A=Diane,Speaker B=Sheila"`` or a names file (one ``Speaker A = Diane`` per
    line, so a name may hold a comma; a line whose first non-blank is ``#`` is a comment, and so is
    what follows `` # `` after an entry, so ``Team #1`` is a name) into ``{"Speaker A": "Diane", …}``.

    Args:
        text: the names.
        lines: True for a names file's text (one entry a line), False for the one-line form
            (entries separated by commas); None: a file's when ``text`` holds a line break.

    A label is a diarization label as :func:`voicekit.turns.speaker_label` spells it
    (``Speaker A``, ``Speaker B``, … ``Speaker AA``) or any other speaker of a turn (a LiveKit
    participant's name); it must match the turns' ``speaker`` exactly.

    Raises:
        ValueError: (in a names file, the message starts ``line N:``) for an entry without ``=``,
            without a label or a name, or whose name holds
            another ``=`` (entries run together: ``Speaker A=Ana;Speaker B=Ben``); a label given
            twice; a label spelled like a diarization label but not exactly (``speaker a``,
            ``Speaker_A``): the message gives the right spelling; a name that is another
            diarization label (``Speaker A=Speaker B``: the outputs would merge the two).
    """
    names: dict[str, str] = {}
    # a names file (text with a line break) holds one entry a line, so a name may hold a comma
    # ("Park, Elena"); the one-line form separates entries with commas
    if lines is None:
        lines = "\n" in text
    for n, raw in enumerate(text.splitlines() if lines else text.split(","), start=1):
        try:
            if raw.lstrip().startswith("#"):
                continue   # a comment line
            item = _COMMENT.split(raw, 1)[0].strip()   # "# …" after a blank ends an entry: "Team #1" is a name
            if not item:
                continue
            item = item.replace("\uff1d", "=", 1)   # a full-width ＝, as a Japanese or Chinese input method types it
            if "=" not in item:
                hint = ("; a name holding a comma goes in a names file, one entry a line (--speaker-names names.txt)"
                        if not lines and "," in text else "")
                raise ValueError(f"speaker name entry {item!r} has no '=': write 'Speaker A=Diane'{hint}")
            label, name = (part.strip() for part in item.split("=", 1))
            if _DIARIZATION_LIKE.fullmatch(unicodedata.normalize("NFKC", label)):
                label = unicodedata.normalize("NFKC", label)   # full-width Ｓｐｅａｋｅｒ Ａ: a label, spelled as typed
            if not label or not name:
                raise ValueError(f"speaker name entry {item!r} is missing a label or a name")
            if "=" in name:
                fix = ("write one entry per line (a name in a names file may hold a comma: 'Park, Elena')" if lines
                       else "separate entries with ',' ('Speaker A=Ana,Speaker B=Ben'), or write one per line in a "
                       "names file")
                raise ValueError(f"the name {name!r} given to {label} holds '=': {fix}")
            m = _DIARIZATION_LIKE.fullmatch(label)
            if m and label != (right := f"Speaker {m.group(1).upper()}"):
                raise ValueError(f"label {label!r} is written {right!r}: a capital S, one space, capital letters"
                                 + ("; only RTTM files write the space as _" if "_" in label else ""))
            if label in names:
                raise ValueError(f"{label} is given twice ({names[label]}, then {name}): give each label one name")
            clash = _label_clash(label, name)
            if clash:
                raise ValueError(f"{label}={name}: {clash}")
            names[label] = name
        except ValueError as exc:   # a names file: which line
            if lines:
                raise ValueError(f"line {n}: {exc}") from None
            raise
    return names
