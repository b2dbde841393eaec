#!/bin/sh
# Install pyannote.audio 4.0.7 for voicekit's `--diarizer pyannote` without CUDA wheels.
#
# Usage: sh scripts/install_pyannote.sh [PYTHON]     (default: python3 on PATH; run from the repo root)
#
# pyannote.audio requires torchaudio and torchcodec. Their PyPI wheels are CUDA builds: on the CPU
# torch 2.13.0 that voicekit pins, torchcodec fails to import and torchaudio's C++ extension does
# not load (libc10_cuda.so missing). voicekit passes pyannote in-memory waveforms, so torchcodec is
# never needed, and pyannote's inference path uses only pure-Python torchaudio functions
# (compliance.kaldi.fbank, functional.resample). So:
#   1. the `pyannote` extra installs the dependencies pip can resolve without torchaudio/torchcodec;
#   2. pyannote.audio and the packages that require torchaudio are installed with --no-deps;
#   3. on a CPU torch, torchaudio's CUDA-linked extension libraries are removed, so that
#      torchaudio runs as pure Python (what torchaudio itself does when its libraries are absent).
# On a machine with a CUDA torch of the same version, a plain `pip install pyannote.audio` works.
set -eu
PY=${1:-python3}
"$PY" -m pip install -q -e '.[pyannote]'
"$PY" -m pip install -q --no-deps pyannote.audio==4.0.7 torchaudio==2.11.1 torch-audiomentations==0.12.0 \
  julius==0.2.8 torch-pitch-shift==1.2.5 primePy==1.3
"$PY" -W ignore::UserWarning - <<'PYEOF'  # torchcodec is absent on purpose
import importlib.util
from pathlib import Path

import torch

if torch.version.cuda is None:
    lib = Path(importlib.util.find_spec("torchaudio").origin).parent / "lib"
    for so in sorted(lib.glob("*.so")):
        so.unlink()
        print(f"removed {so.name} (CUDA-linked; this torch is a CPU build)")
# through voicekit, whose import turns ONNX Runtime's and pyannote's telemetry off (docs/privacy.md);
# fails here, not at the first replay, if anything is missing
from voicekit.diarization.pyannote_backend import import_pyannote  # noqa: E402

print(f"pyannote.audio {import_pyannote().__version__} ready")
PYEOF
