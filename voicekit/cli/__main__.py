"""``python -m voicekit.cli ARGS``: the ``voicekit`` command."""

from voicekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
