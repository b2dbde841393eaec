"""``python -m voicekit ARGS``: the ``voicekit`` command, the same entry point as the console
script (``voicekit.cli:main``) and ``python -m voicekit.cli``."""

from voicekit.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
