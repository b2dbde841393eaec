"""``voicekit eval`` (DER / WER / RTF on ../shared/eval) and ``voicekit models`` (where each model
comes from, its checksums)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from voicekit.cli.common import CliError, HelpFormatter, machine_line, source_commit
from voicekit.cli.options import _options, _pipeline_args


EPILOG_EVAL = """\
your own recordings: make a folder with an index.tsv, tab-separated, one header row, then a row
per recording (paths relative to the folder; "-" for none):

  file_id   audio        rttm          uem   transcript   speakers   kind
  mtg1      mtg1.wav     mtg1.rttm     -     mtg1.txt     3          office

file_id is the second field of the RTTM's SPEAKER lines (SPEAKER mtg1 1 12.30 2.10 <NA> <NA> ana
<NA> <NA>); the UEM (a line "file_id 1 start end" per stretch) limits scoring to its stretches;
the transcript (plain text, or STM: "file_id 1 speaker start end text" lines) adds WER, and an STM,
which names the speakers, cpWER (words and speakers together, docs/accuracy.md); speakers
is the true count (--oracle-count gives it to the diarizer). Then: voicekit eval --eval-dir FOLDER

to score the hypotheses with another tool (md-eval, dscore), --out DIR writes each file's
DIR/<file_id>.rttm (live) and DIR/<file_id>.refined.rttm, the annotations the table scored.
"""


def cmd_eval(args: argparse.Namespace) -> int:
    from rich.console import Console

    from voicekit.evaluation import EvalIndexError, UnknownFileIdError, evaluate_file, format_table, load_index
    from voicekit.pipeline import Components

    err = Console(stderr=True, highlight=False)
    try:
        files = load_index(args.eval_dir, only=args.files)
    except UnknownFileIdError as exc:
        raise CliError(f"--files: {exc}") from exc
    except (FileNotFoundError, EvalIndexError) as exc:
        raise CliError(str(exc)) from exc
    if args.oracle_count and (args.num_speakers or args.min_speakers or args.max_speakers):
        raise CliError("--oracle-count gives each file its true speaker count: drop --num-speakers, "
                       "--min-speakers and --max-speakers")
    options = _options(args)
    components = Components.load(options)
    load0 = os.getloadavg()[0]
    results = []
    for f in files:
        err.print(f"[dim]{f.file_id}…[/dim]")
        results.append(evaluate_file(f, components, options, oracle_count=args.oracle_count, out_dir=args.out))
    if args.oracle_count:
        print("speaker count: each file's true count given (--oracle-count)\n")
    print(format_table(results))
    if args.out:
        print(f"\nhypothesis RTTMs: {args.out}/<file_id>.rttm and <file_id>.refined.rttm")
    print()
    print(f"options: {_given_options(args)}")
    print(f"{machine_line()}; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
          "(other work on the machine slows the RTF column)")
    print(f"commit: {source_commit()}")
    return 0 if all(r.error is None for r in results) else 1


def _given_options(args: argparse.Namespace) -> str:
    """The options of ``voicekit eval`` that differ from their defaults, as given
    (``--vad-threshold 0.3, --num-speakers 2``), or ``the defaults``: a pasted table says what
    produced it (an evaluator's trial took a ``--vad-threshold 0.3`` run for the default's)."""
    from voicekit.cli import build_parser

    defaults = vars(build_parser().parse_args(["eval"]))
    skip = {"eval_dir", "files", "out", "func", "command", "debug"}
    given = []
    for key, value in vars(args).items():
        if key in skip or key not in defaults or value == defaults[key]:
            continue
        flag = "--" + key.replace("_", "-")
        given.append(flag if value is True else f"{flag} {' '.join(map(str, value)) if isinstance(value, list) else value}")
    return ", ".join(given) or "the defaults"


def cmd_models(args: argparse.Namespace) -> int:
    """List the models and where they lie; the first listing joins Whisper ``base`` into the cache
    (145 MB, said in the output). With ``--verify``, hash every packaged file: a joined ``base``
    that fails its sha256 is joined again from the packages (said; not a failure once repaired).

    Returns:
        0, or 1 (``--verify``) when a file does not match its sha256 or a model cannot be
        checked; an optional model none of whose packages is installed (``base`` without
        ``voicekit[multilingual]``) is listed as "not available", not a failure.
    """
    import importlib.util

    from voicekit.models import MANIFEST, ModelError, join_base, model_path, reinstall_command, verify

    joined_note = {"joined": "joined its two halves into this cache (145 MB, done once)",
                   "rejoined": "joined again from its packages: the cached model.bin did not match its sha256"}
    bad = 0
    for name, entry in MANIFEST.items():
        print(f"{name}  ({entry['kind']}) from {entry['package']}")
        try:
            if name == "base":
                path, done = join_base()
                print(f"    {path}")
                if done in joined_note:
                    print(f"    {joined_note[done]}")
            else:
                print(f"    {model_path(name)}")
            if args.verify:
                ok = verify(name)
                if name == "base" and not all(ok.values()):
                    join_base(force=True)
                    ok = verify(name)
                    print(f"    sha256 MISMATCH in the joined cache {path}: rejoined it from the packages; "
                          + ("sha256 now ok" if all(ok.values()) else f"still wrong: reinstall: {reinstall_command(entry)}"))
                    bad += not all(ok.values())
                    continue
                bad += not all(ok.values())
                print("    sha256 " + ("ok" if all(ok.values()) else
                                      "MISMATCH: " + ", ".join(f for f, good in ok.items() if not good)
                                      + f"; reinstall: {reinstall_command(entry)}"))
        except ModelError as exc:
            print(f"    not available: {exc}")
            # nothing to check is no passed check, but for an optional model none of whose packages
            # is installed (base without voicekit[multilingual]): the default install passes --verify
            optional = entry.get("optional", False) and not any(
                importlib.util.find_spec(part["module"]) for part in entry.get("parts", []))
            bad += bool(args.verify) and not optional
    return 1 if bad else 0


def _tool_parsers(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("eval", help="DER / WER / RTF on the evaluation recordings",
                       description="Run the pipeline on every recording with a reference and print "
                                   "DER (collar 0 and 0.5), speakers found, WER, RTF and, where the transcript names its "
                                   "speakers, cpWER.",
                       epilog=EPILOG_EVAL, formatter_class=HelpFormatter)
    p.add_argument("--eval-dir", default=str(Path(__file__).resolve().parents[2].parent / "shared" / "eval"),
                   help="folder with index.tsv (default: shared/eval beside the voicekit checkout, "
                        "%(default)s)")
    p.add_argument("--files", nargs="+", metavar="ID", help="only these file ids (the first column of index.tsv; default: all)")
    p.add_argument("--oracle-count", action="store_true",
                   help="give each file its true speaker count (index.tsv's speakers column) as --num-speakers")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="also write the scored hypotheses: DIR/<file_id>.rttm and DIR/<file_id>.refined.rttm")
    _pipeline_args(p)
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("models", help="list the models, where they come from, and check their checksums",
                       description="List every model voicekit can use (Whisper tiny.en and base, the speaker "
                                   "encoder, Silero VAD), the PyPI package each comes from, where it lies on "
                                   "this machine; with --verify, whether its files match the recorded sha256 "
                                   "checksums (exit code 1 if one does not).")
    p.add_argument("--verify", action="store_true", help="check sha256 of the packaged weights")
    p.set_defaults(func=cmd_models)
