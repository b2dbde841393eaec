"""Writers for a meeting's turns: JSON, RTTM, SRT, WebVTT and plain text.

Every writer takes the committed turns (time order) and writes one file. The JSON schema is
documented in ``docs/transcript-format.md``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from pathlib import Path

from voicekit.turns import SpeakerTurn

FORMATS = ("json", "rttm", "srt", "vtt", "txt")


class OutputError(Exception):
    """An output file cannot be written. The message names the file and the reason."""


JSON_SCHEMA_VERSION = 1


def clock(seconds: float, sep: str = ".", digits: int = 3) -> str:
    """Format seconds as ``HH:MM:SS.mmm`` (``sep`` before the fraction, ``digits`` of it)."""
    seconds = max(0.0, seconds)
    scale = 10 ** digits
    total = int(round(seconds * scale))
    h, rest = divmod(total, 3600 * scale)
    m, rest = divmod(rest, 60 * scale)
    s, frac = divmod(rest, scale)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{frac:0{digits}d}"


def format_line(turn: SpeakerTurn) -> str:
    """The live line for a turn: ``[00:00:03.1 → 00:00:07.9] Speaker A: text``."""
    return f"[{clock(turn.start, digits=1)} → {clock(turn.end, digits=1)}] {turn.sender_name}: {turn.text}"


def to_json(turns: Sequence[SpeakerTurn], meta: dict | None = None) -> dict:
    """The transcript as a JSON-serialisable dict (schema in ``docs/transcript-format.md``)."""
    speakers: dict[str, str] = {}
    for t in turns:
        speakers.setdefault(t.speaker, t.sender_name)
    return {
        "version": JSON_SCHEMA_VERSION,
        "meeting": meta or {},
        "speakers": [{"label": k, "name": v} for k, v in speakers.items()],
        "turns": [
            {
                "id": t.turn_id,
                "speaker": t.speaker,
                "name": t.sender_name,
                "channel": t.channel,
                "start": round(t.start, 3),
                "end": round(t.end, 3),
                "text": t.text,
                "confidence": round(t.confidence, 4),
                "emitted_at": None if t.emitted_at is None else round(t.emitted_at, 3),
                **({"moved_from": t.metadata["moved_from"]} if "moved_from" in t.metadata else {}),
                "words": [{"start": round(w.start, 3), "end": round(w.end, 3), "word": w.text,
                           "probability": round(w.probability, 4)} for w in t.words],
            }
            for t in turns
        ],
    }


def json_text(doc: dict) -> str:
    """The transcript JSON as text: the meeting header indented, then one turn per line.

    Each turn goes through the C JSON encoder (``json.dumps`` without ``indent``; with it, the
    encoder is pure Python and a 50,000-turn meeting takes tens of seconds).
    """
    head = {k: v for k, v in doc.items() if k != "turns"}
    lines = json.dumps(head, ensure_ascii=False, indent=2)[:-2]  # drop the closing "\n}"
    turns = ",\n".join("    " + json.dumps(t, ensure_ascii=False) for t in doc.get("turns", []))
    return f'{lines},\n  "turns": [\n{turns}\n  ]\n}}\n' if turns else f'{lines},\n  "turns": []\n}}\n'


def to_rttm(turns: Sequence[SpeakerTurn], file_id: str) -> str:
    """RTTM lines ``SPEAKER <file> 1 <start> <dur> <NA> <NA> <name> <NA> <NA>``; spaces in names
    become ``_`` (RTTM fields are space-separated)."""
    lines = []
    for t in turns:
        name = "_".join(t.sender_name.split())
        fid = "_".join(file_id.split())
        lines.append(f"SPEAKER {fid} 1 {t.start:.3f} {max(0.0, t.end - t.start):.3f} <NA> <NA> {name} <NA> <NA>")
    return "\n".join(lines) + ("\n" if lines else "")


def to_srt(turns: Sequence[SpeakerTurn]) -> str:
    """SubRip subtitles, one cue per turn: ``Speaker A: text``."""
    cues = []
    for i, t in enumerate(turns, 1):
        cues.append(f"{i}\n{clock(t.start, ',')} --> {clock(t.end, ',')}\n{t.sender_name}: {t.text}\n")
    return "\n".join(cues)


def to_vtt(turns: Sequence[SpeakerTurn]) -> str:
    """WebVTT with voice tags: ``<v Speaker A>text``."""
    def esc(s: str) -> str:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    cues = ["WEBVTT\n"]
    for t in turns:
        cues.append(f"{clock(t.start)} --> {clock(t.end)}\n<v {esc(t.sender_name)}>{esc(t.text)}\n")
    return "\n".join(cues)


def to_text(turns: Sequence[SpeakerTurn]) -> str:
    """Plain text, one live line per turn."""
    return "".join(format_line(t) + "\n" for t in turns)


def write_all(turns: Sequence[SpeakerTurn], out_dir: str | Path, stem: str, meta: dict | None = None,
              suffix: str = "") -> list[Path]:
    """Write every format to ``out_dir/<stem><suffix>.<ext>`` atomically (write, then rename).

    A file is replaced only once its new content is fully written: a full disk or a read-only
    directory leaves every earlier output as it was, and no partial ``.tmp`` file.

    Returns:
        the paths written.

    Raises:
        OutputError: a file cannot be written (disk full, permissions); the message names it.
    """
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output directory {out_dir} ({exc.strerror or exc})") from exc
    contents = {
        "json": json_text(to_json(turns, meta)),
        "rttm": to_rttm(turns, stem),
        "srt": to_srt(turns),
        "vtt": to_vtt(turns),
        "txt": to_text(turns),
    }
    written = []
    for ext, text in contents.items():
        path = out_dir / f"{stem}{suffix}.{ext}"
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            raise OutputError(f"cannot write {path} ({exc.strerror or exc})") from exc
        written.append(path)
    return written
