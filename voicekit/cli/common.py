"""What the whole command line shares: :class:`CliError` (the one-line error, exit code 2), small
helpers (plurals, a writable ``--out``, chained ``on_turn`` callbacks, graceful Ctrl-C, a reader of
the live lines that goes away) and the lines a measurement is recorded with (:func:`machine_line`,
:func:`source_commit`)."""

from __future__ import annotations

import argparse
import math
import os
import platform
import signal
import sys
import threading
from pathlib import Path


class CliError(Exception):
    """An error to print as one line (exit code 2)."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``--help``: each paragraph of a description or epilog (paragraphs are split by a blank
    line) that is prose, no line of it indented, is filled to the terminal's width (a
    screen-reader trial found a 287-character line at 60 columns); a paragraph with indented
    lines (examples, a list of commands, a table) is kept as it is written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.splitlines()
            if lines and not any(line[:1].isspace() for line in lines):
                out.append(argparse.HelpFormatter._fill_text(self, paragraph, width, indent))
            else:
                out.append(super()._fill_text(paragraph, width, indent))
        return "\n\n".join(out)


def finite_float(text: str) -> float:
    """argparse ``type`` for a number option: a float that is neither NaN nor infinite (Python's
    ``float`` takes "nan" and "inf", which no voicekit duration or threshold means).

    Raises:
        argparse.ArgumentTypeError: the text is not a finite number.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def meeting_dir(text: str) -> str:
    """argparse ``type`` for ``--out``: a meeting directory, never the empty string (an unset shell
    variable, ``--out "$DIR"``, would put the store and outputs in the current directory).

    Raises:
        argparse.ArgumentTypeError: the text is empty or blank.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("the meeting directory is empty (an unset variable?): give a folder, "
                                         "e.g. --out out/meeting")
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def warn(err, text: str) -> None:  # noqa: ANN001 - a rich Console
    """Print a warning on ``err`` (the stderr Console): ``warning: text``, yellow on a colour
    terminal, so that it reads as a warning without colour too (a log, a screen reader), as the
    logged ones do. ``text`` is rich markup (escape what a user gave)."""
    err.print(f"[yellow]warning: {text}[/yellow]")


def _check_writable(out: Path) -> None:
    """Make ``out`` and check that this user may write in it (a probe file, removed).

    Raises:
        CliError: ``out`` or a folder above it is a file; or it cannot be written, with the way
            on: a folder this user may not write (EACCES, EPERM, EROFS) is named to make writable.
    """
    import errno

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".voicekit-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        a_file = next((p for p in (out, *out.parents) if p.exists() and not p.is_dir()), None)
        if a_file is not None:
            what = "a file" if a_file.is_file() else "a device or special file"   # --out /dev/full
            raise CliError(f"cannot write to the output directory {out}: {a_file} is {what}, not a "
                           "directory; choose another --out") from exc
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            # the folder to fix: out itself, or the nearest one above it that exists (mkdir failed there)
            folder = next((p for p in (out, *out.parents) if p.is_dir()), out)
            fix = (f"mount the file system of {folder} read-write" if exc.errno == errno.EROFS else
                   "make it writable" if folder == out else f"make the folder {folder} writable")
            raise CliError(f"cannot write to the output directory {out} ({exc.strerror}): {fix}, "
                           "or choose another --out") from exc
        raise CliError(f"cannot write to the output directory {out} ({exc.strerror}); "
                       "choose another --out") from exc


_HELD_DIRS: list[int] = []   # descriptors of the meeting directories this command holds


def _lock_meeting_dir(out: Path, fix: str = "wait until it ends, or choose another --out") -> None:
    """Take the meeting directory ``out`` for this command (an exclusive ``flock`` on the
    directory itself: no lock file is left behind, and the kernel releases it when the process
    ends, a crash included); :func:`_release_meeting_dirs` (``main`` calls it when the command
    returns) lets it go.

    Args:
        out: the meeting directory.
        fix: what the error tells the user to do when another command holds it.

    Raises:
        CliError: when another voicekit command holds ``out``: two meetings into one store would
            replace each other's turns, and an export beside a running meeting would rewrite its
            outputs and embeddings under it.
    """
    import fcntl
    import os

    fd = os.open(out, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CliError(f"{out} is in use by another voicekit command (a meeting is being recorded or replayed "
                       f"into it, or exported): {fix}") from None
    _HELD_DIRS.append(fd)


def _release_meeting_dirs() -> None:
    """Let go of the meeting directories :func:`_lock_meeting_dir` took."""
    import os

    while _HELD_DIRS:
        os.close(_HELD_DIRS.pop())


def _chain(*callbacks):
    live = [c for c in callbacks if c is not None]

    def on_turn(turn) -> None:
        for c in live:
            c(turn)
    return on_turn


class _GracefulStop:
    """First SIGINT/SIGTERM calls ``stop``; the next SIGINT raises
    :class:`voicekit.pipeline.MeetingAborted` (the pipeline then commits nothing more).

    Attributes:
        signum: the first signal received (None before one; SIGPIPE after :meth:`stdout_failed`).
    """

    def __init__(self, stop) -> None:  # noqa: ANN001
        self.stop = stop
        self.signum: int | None = None

    @property
    def requested(self) -> bool:
        """A stop was asked for."""
        return self.signum is not None

    @property
    def exit_code(self) -> int:
        """What a command that was stopped exits with: 128 + the signal's number, as a shell
        reports a process the signal ended (130 for Ctrl-C, 143 for SIGTERM)."""
        return 128 + (self.signum or signal.SIGINT)

    def stdout_failed(self) -> None:
        """stdout failed (:class:`_ReaderWatch`): the first stop, unless one was asked for
        already (signum SIGPIPE; the command exits with the watch's code)."""
        if not self.requested:
            self._handler(signal.SIGPIPE, None)

    def _handler(self, signum, frame) -> None:  # noqa: ANN001
        if self.requested and signum == signal.SIGINT:
            from voicekit.pipeline import MeetingAborted

            raise MeetingAborted
        if self.signum is None:
            self.signum = signum
        self.stop()

    def __enter__(self) -> "_GracefulStop":
        self._old = {s: signal.signal(s, self._handler) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        for s, h in self._old.items():
            signal.signal(s, h)


def _silence_stream(stream) -> None:  # noqa: ANN001 - a text stream
    """Point the file descriptor of ``stream`` (sys.stdout, sys.stderr) at /dev/null: what is still
    buffered for a reader that went away can be flushed at exit without another BrokenPipeError,
    as the Python docs advise (signal module, "Note on SIGPIPE"). Does nothing where the stream
    is no file (a test's capture)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):   # io.UnsupportedOperation is an OSError
        pass


class _GuardedStream:
    """Stands in for ``sys.<name>`` (``name``: ``"stdout"`` or ``"stderr"``) while in its
    ``with`` block and passes every write and flush on to the real stream; the first write or
    flush that fails with an OSError goes to :meth:`_failed` (``error`` keeps it), later ones are
    dropped. Everything else (isatty, fileno, encoding…) is the real stream's. A stream that is
    None (started with ``>&-``) is left as it is."""

    name = "stdout"

    def __init__(self) -> None:
        self.error: OSError | None = None
        self._lock = threading.Lock()
        self._stream = getattr(sys, self.name)

    def __enter__(self):  # noqa: ANN204
        self._stream = getattr(sys, self.name)
        if self._stream is not None:
            setattr(sys, self.name, self)
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        if self._stream is not None:
            setattr(sys, self.name, self._stream)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as exc:
            self._fail_once(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            self._fail_once(exc)

    def __getattr__(self, name: str):  # noqa: ANN204 - isatty, fileno, encoding… of the real stream
        return getattr(self._stream, name)

    def _fail_once(self, exc: OSError) -> None:
        with self._lock:
            if self.error is not None:
                return
            self.error = exc
        _silence_stream(self._stream)   # what is still buffered can be flushed at exit
        self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        """Called once, after the stream was silenced."""


class _StderrGuard(_GuardedStream):
    """sys.stderr for the length of a command: a write error on it (its reader gone: ``voicekit
    mic 2>&1 | tee log`` ended with Ctrl-C, which ends tee too) silences it instead of ending the
    command, which rich does with status 1 at whatever line it was printing: the meeting then
    wrote no outputs. What is printed after is lost; a gone stdout, the live lines' reader, still
    ends the meeting (:class:`_ReaderWatch`)."""

    name = "stderr"


class _ReaderWatch(_GuardedStream):
    """sys.stdout for the length of a meeting command, watched for the live lines' destination
    failing: its reader going away (``voicekit replay talk.wav | head -1``, BrokenPipeError) or
    any other write error (``> /dev/full``, a full disk: OSError). The first failed write or
    flush silences stdout (:func:`_silence_stream`), says so on stderr in one line and calls
    :attr:`on_gone` once, a stop like the first Ctrl-C: the utterances heard so far are committed
    and the outputs written, where an unwatched write would end the command inside the pipeline
    (rich exits with status 1 on a broken pipe) or log a traceback per turn. The command then
    exits :attr:`exit_code`.

    Both ``print`` and a rich ``Console`` made without ``file=`` write through ``sys.stdout``,
    so both are watched. A command started with stdout closed (``>&-``: sys.stdout is None) has
    no live lines to watch: sys.stdout is left as it is. Thread-safe: the live lines of a
    LiveKit meeting come from its lanes' threads.

    Attributes:
        on_gone: called (no arguments) when stdout fails; None: only silenced.
        error: the first write error (None while stdout works).
    """

    PIPE_EXIT_CODE = 128 + signal.SIGPIPE   # 141, what a shell reports for a writer its reader left

    def __init__(self, on_gone=None) -> None:  # noqa: ANN001
        super().__init__()
        self.on_gone = on_gone

    @property
    def gone(self) -> bool:
        """stdout failed: the meeting was stopped for it."""
        return self.error is not None

    @property
    def exit_code(self) -> int:
        """141 after a reader that went away, 2 (voicekit's error code) after another write error."""
        return self.PIPE_EXIT_CODE if isinstance(self.error, BrokenPipeError) else 2

    def _failed(self, exc: OSError) -> None:
        if isinstance(exc, BrokenPipeError):
            line = "the reader of the live lines went away (stdout closed): ending the meeting"
        else:
            line = (f"error: the live lines cannot be written to stdout ({exc.strerror or exc}): ending the "
                    "meeting; its outputs are written to its folder")
        print(f"voicekit: {line}", file=sys.stderr, flush=True)
        if self.on_gone is not None:
            self.on_gone()


def source_commit() -> str:
    """The git commit of this checkout (``abc1234``, ``-dirty`` when tracked files differ), or
    ``unknown`` outside a git checkout: what a measurement is recorded against."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
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
