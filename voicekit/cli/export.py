"""``voicekit export``: rewrite a meeting's outputs from its store, refine it later, drop its kept
speaker embeddings."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from voicekit.cli.common import CliError, _plural
from voicekit.cli.meeting import (OUTPUT_DIGESTS_KEY, _check_readable_store, _has_embeddings, _refine_stored,
                                  _refined_summary, _take_meeting_dir, _write_outputs)
from voicekit.cli.options import _is_names_file, _shared_names, _speaker_names


def _unfinished_note(store, out: Path, meta: dict) -> float:  # noqa: ANN001
    """Print that the meeting in ``out`` did not end; return how far it is known to have gone, in
    seconds (the duration its outputs then give): its last committed turn, or the start of its
    last session (``MeetingStore.resume_point``)."""
    from voicekit.outputs import clock

    turns = store.turns()
    end = store.resume_point().start_time
    print(f"the meeting in {out} did not end: the command recording it ({meta.get('source', 'unknown source')}) "
          f"was stopped before it could finish (killed, the machine went down, or its disk filled up); the outputs hold the "
          f"{_plural(len(turns), 'turn')} committed, up to {clock(end, digits=1)}")
    return end


def _count_or_auto(value: str) -> int | str:
    """``--num-speakers`` of export: a whole number, or ``auto``."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of speakers or auto, got {value!r}") from None


def _names_arg(value: str) -> dict[str, str]:
    """``export --speaker-names``: label -> name, checked as a live meeting checks them."""
    from voicekit.hooks import checked_speaker_names

    try:
        return checked_speaker_names(_speaker_names(value, "export"))
    except ValueError as exc:   # a control character in a name (parse_speaker_names checked the rest)
        raise CliError(f"--speaker-names: {exc}") from exc


def _check_names(store, names: dict[str, str], given: str = "") -> None:  # noqa: ANN001 - MeetingStore
    """Check ``--speaker-names`` before the command writes anything (a re-clustering, dropped
    embeddings): every label is one that a turn of the meeting carries, live or refined.

    Raises:
        CliError: a label no turn carries, with the labels there are and the one meant.
    """
    labels = store.speaker_labels()
    unknown = [label for label in names if label not in labels]
    if unknown:
        shown = {t.sender_name: t.speaker for t in store.turns(renamed=True)}   # a name -> its label

        def meant(typed: str) -> str | None:   # the letter alone (B), or the name a label shows (Diane)
            letter = f"Speaker {typed.strip().upper()}"
            return letter if letter in labels else f"{shown[typed]} (named {typed})" if typed in shown else None

        hint = [h for h in map(meant, unknown) if h]
        raise CliError(f"--speaker-names{' ' + given if given else ''}: {', '.join(unknown)} "
                       f"{'is' if len(unknown) == 1 else 'are'} no speaker "
                       f"of this meeting (its speakers{', live and refined' if store.has_refined() else ''}: "
                       f"{', '.join(sorted(labels)) or 'none'}); nothing renamed"
                       + (f": did you mean {', '.join(hint)}?" if hint else ""))


def _rename(store, names: dict[str, str]) -> None:  # noqa: ANN001 - MeetingStore
    """Name the meeting's speakers after it (``--speaker-names``, checked by :func:`_check_names`)
    and say what was renamed."""
    from voicekit.store import StoreError

    try:
        store.rename_speakers(names)
    except StoreError as exc:
        raise CliError(f"{exc}; nothing renamed") from exc
    counts = Counter(t.speaker for t in store.turns())

    def said(label: str) -> str:
        name = names[label]
        what = f"{label} is shown under its label again" if name == label else f"{label} is {name}"
        return what + (f" ({_plural(counts[label], 'live turn')})" if label in counts else
                       " (refined only: a later re-clustering may give this label to other speech)")

    print(f"named after the meeting: {', '.join(said(label) for label in names)}; the store keeps the names the "
          "turns were emitted with (<stem>.json: emitted_name)")
    # said for the names given now (one given on purpose to two labels is not said again each time)
    shared = _shared_names({label: name for label, name in {**store.speaker_names(), **names}.items()
                            if name in names.values()})
    if shared:
        print(f"{shared}: the outputs show them as one person")


def _renamed_refined_only(store) -> list[str]:  # noqa: ANN001 - MeetingStore
    """Labels named after the meeting that no live turn carries (a refinement opened them): a
    re-clustering may give them to other speech."""
    live = {t.speaker for t in store.turns()}
    return [label for label in store.renamed_speakers() if label not in live]


def cmd_export(args: argparse.Namespace) -> int:
    from voicekit.outputs import REFINED_SUFFIX
    from voicekit.store import MeetingStore

    out = Path(args.dir)
    if out.name == "meeting.sqlite" and out.is_file():   # the store itself: its folder is the meeting
        out = out.parent
    store_path = out / "meeting.sqlite"
    if out.is_file():
        folder = out.parent if (out.parent / "meeting.sqlite").is_file() else None
        raise CliError(f"{out} is a file: give the --out directory of a voicekit replay, mic or livekit meeting, "
                       + (f"here {folder}" if folder else "the folder that holds its meeting.sqlite"))
    if not store_path.is_file():
        raise CliError(f"{store_path} not found: give the --out directory of a voicekit replay, mic or livekit meeting")
    if args.num_speakers is not None and not args.refine:
        raise CliError("--num-speakers applies to the re-clustering: add --refine")
    names = _names_arg(args.speaker_names) if args.speaker_names else {}
    _check_readable_store(store_path, "export writes outputs only from a voicekit meeting",
                          access_way="copy the folder and export the copy")
    _take_meeting_dir(out, fix="export it when that command has ended (it writes the outputs itself as it ends)")
    store = MeetingStore(store_path)
    meta = store.meta()
    meta.pop(OUTPUT_DIGESTS_KEY, None)   # the store's record of the files, not the meeting's
    stem = meta.get("stem", "meeting")
    if "duration" in meta and meta["duration"] is None:  # set when a replay or capture ends: this one was killed
        meta["duration"] = _unfinished_note(store, out, meta)
    # a meeting that went on after its refinement (mic --append) holds turns the refinement lacks;
    # it can be redone only from kept embeddings
    stale = store.unrefined_turns() if store.has_refined() else 0
    redo = bool(stale) and _has_embeddings(store_path)
    if names:   # before anything is written: a typo no longer left a new refinement and no embeddings
        _check_names(store, names, args.speaker_names if _is_names_file(args.speaker_names) else "")
    try:
        count = None if args.num_speakers == "auto" else args.num_speakers
        if args.refine and (args.num_speakers is not None or not store.has_refined() or redo):
            if redo:
                print(f"the stored refinement lacks the {_plural(stale, 'turn')} committed since: re-clustering "
                      "the whole meeting" + ("" if count else " (--num-speakers N sets the count)"))
            _refine_stored(store, count, out)
            print(_refined_summary(store))
            moved = _renamed_refined_only(store)
            if moved:
                named = store.renamed_speakers()
                print(f"warning: {', '.join(f'{label} ({named[label]})' for label in moved)} "
                      f"{'was' if len(moved) == 1 else 'were'} named after an earlier refinement and no live turn "
                      "carries the label: this re-clustering may have given it to other speech; read the refined "
                      f"lines, and name again with `voicekit export {out} --speaker-names`")
        elif args.refine:
            print("using the refinement already stored" + (" (pass --num-speakers N, or auto, to re-cluster from "
                                                            "the kept embeddings)" if store.embeddings() else ""))
        if names:
            _rename(store, names)
        if args.drop_embeddings:   # last: what failed before leaves them to try again
            dropped = store.drop_embeddings()
            print(f"deleted the speaker embeddings of {_plural(dropped, 'utterance')}" if dropped else
                  "this meeting keeps no speaker embeddings: nothing to delete")
        renamed = store.renamed_speakers()
        if renamed:
            meta["renamed"] = renamed
        written = _write_outputs(store.turns(renamed=True), out, stem, meta, store=store)
        if store.has_refined():
            if stale and not (args.refine and redo):
                print(f"the stored refinement lacks the {_plural(stale, 'turn')} committed since it ran: "
                      f"{stem}{REFINED_SUFFIX}.* give them their live labels" +
                      (f" (`voicekit export {out} --refine` re-clusters the whole meeting)" if redo else
                       " (no speaker embeddings are kept to re-cluster the meeting)"))
            written += _write_outputs(store.turns(refined=True, renamed=True), out, stem, {**meta, "refined": True},
                                      suffix=REFINED_SUFFIX, store=store)
    finally:
        store.close()
    print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    return 0


def _export_parser(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("export", help="rewrite the outputs from a meeting store",
                       description="Rewrite OUT/<stem>.{json,rttm,srt,vtt,txt} (and <stem>.refined.* where a "
                                   "refinement is stored) from OUT/meeting.sqlite: after a crash, a Ctrl-C, to "
                                   "refine a meeting later, or to name its speakers once you know who they were "
                                   "(--speaker-names). Re-clustering needs the speaker embeddings, which "
                                   "only --keep-embeddings keeps (`replay --refine` alone does not). An output "
                                   "you edited since voicekit wrote it is kept as <stem>.edited.<ext> before it "
                                   "is rewritten.")
    p.add_argument("dir", metavar="OUT", help="the --out directory of a replay, mic or livekit meeting")
    p.add_argument("--refine", action="store_true",
                   help="write <stem>.refined.*: re-cluster from the embeddings kept with --keep-embeddings "
                        "when the meeting has no refinement yet, lacks turns committed since it ran, or "
                        "--num-speakers is given, else use the refinement stored (live labels are never "
                        "changed; an estimated count is at most 8 speakers); without --refine, "
                        "<stem>.refined.* are rewritten only where a refinement is stored")
    p.add_argument("--num-speakers", type=_count_or_auto, default=None, metavar="N|auto",
                   help="with --refine: re-cluster into this many speakers, or with the count estimated "
                        "again (auto: after an earlier --num-speakers) (needs the kept embeddings); a "
                        "cluster with under 3 s of speech (12 windows) joins the most alike one, so a meeting with "
                        "fewer voices ends with fewer")
    p.add_argument("--speaker-names", default=None, metavar="MAP_OR_FILE",
                   help="name speakers after the meeting: 'Speaker A=Diane,Speaker B=Sheila', or a file with "
                        "one 'Speaker A = Diane' per line; every turn of the label, live and refined, is "
                        "written under the name, whatever it was emitted with (its label, a hook's rename, a "
                        "known voice's name: a wrong one is corrected so). The store keeps the names, and "
                        "what each turn was emitted with (<stem>.json: emitted_name)")
    p.add_argument("--drop-embeddings", action="store_true",
                   help="delete the speaker embeddings kept with --keep-embeddings (after any --refine)")
    p.set_defaults(func=cmd_export)
