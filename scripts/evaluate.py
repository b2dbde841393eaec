#!/usr/bin/env python
"""Evaluate voicekit on the recordings with references in ../shared/eval.

Prints, per file and pooled, DER at collar 0 and 0.5 (live and refined outputs, with the false
alarm / missed / confusion split), speakers found vs true, WER where a transcript exists, and the
real-time factor, plus the options that differ from the defaults, the machine it ran on (with its
load average, which the RTF column depends on) and the commit. Same as ``voicekit eval``.

    python scripts/evaluate.py                      # all 19 files
    python scripts/evaluate.py --files sample test  # some files
"""

from voicekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["eval", *__import__("sys").argv[1:]]))
