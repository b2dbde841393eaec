#!/usr/bin/env python
"""Fetch the demo recording from PyPI (the pyannote.audio 4.0.7 wheel carries it) and check it.

    python samples/fetch.py [DEST]      # default .samples/

Uses ``pip download --no-deps`` (no torch, nothing installed), reads the three sample files out
of the wheel, and checks their sha256. Prints the path of sample.wav.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "pyannote.audio==4.0.7"
FILES = {
    "sample.wav": "c319b4abca767b124e41432d364fd7df006cb26bb79d09326c487d606a134e6e",
    "sample.rttm": "d78fe62c69d8e6dcbb42c26adfce83faccb374c5a1e6d987fe37f85f1c173c87",
    "sample.stm": "f861f3004927e1c4429199f9695bfd252def75d7d5e4bdf735d3d85fd4a667f7",
}


def main() -> int:
    dest = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / ".samples")
    dest.mkdir(parents=True, exist_ok=True)
    if all((dest / f).is_file() and hashlib.sha256((dest / f).read_bytes()).hexdigest() == h
           for f, h in FILES.items()):
        print(dest / "sample.wav")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", tmp],
                       check=True)
        wheel = next(Path(tmp).glob("pyannote_audio-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for name, digest in FILES.items():
                data = z.read(f"pyannote/audio/sample/{name}")
                got = hashlib.sha256(data).hexdigest()
                if got != digest:
                    print(f"fetch: {name} from {wheel.name} has sha256 {got}, expected {digest}", file=sys.stderr)
                    return 1
                (dest / name).write_bytes(data)
    print(dest / "sample.wav")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
