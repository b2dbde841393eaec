#!/bin/sh
# Prepare, on the development machine, what scripts/device/run_gpu_bench.sh needs on the lent GPU
# machine (kind nvidia-h200: Python 3.12, torch 2.11 + CUDA, no network; docs/performance.md,
# "GPU (issue 9)"):
#   1. .whl/*.whl: the cp312 manylinux wheels that scripts/bench_gpu.py imports and that the
#      machine's image lacks (its package list: /work/.library/device/KINDS.md);
#   2. .whl/eval/: the eval recordings the benchmark reads (../shared does not travel there).
# .whl/ is ignored through .git/info/exclude and carried by the device `run` call (carry [".whl"]).
#
# Usage, from the checkout that the device call sends:  sh scripts/device/prepare_wheels.sh
#   PYTHON (default python3) runs pip download; the copy of the recordings runs scripts/bench_gpu.py
#   with VOICEKIT_PYTHON (default: PYTHON), which needs voicekit's dependencies (the .venv);
#   VOICEKIT_EVAL_DIR (default ../shared/eval) is where the recordings are read.
#
# Which wheels: the distributions that `scripts/bench_gpu.py --device cpu` imports here (traced
# from sys.modules), less those in the machine's image (torch, torchaudio, numpy, scipy, lightning,
# torchmetrics, einops, safetensors, huggingface-hub, protobuf, requests, numba, pandas, sklearn,
# matplotlib, pyyaml, tqdm, joblib, lazy-loader, msgpack, typer, sortedcontainers, onnxruntime…).
# Versions are those tested in voicekit's .venv (pyannote.audio 4.0.7 and the --no-deps packages
# as scripts/install_pyannote.sh pins them). Requires-Dist deliberately not carried, because
# nothing imports them on this path: torchcodec (audio is passed in memory), pyannoteai-sdk,
# pytorch-metric-learning, opentelemetry-exporter-otlp (a meta-package), googleapis-common-protos,
# optuna's alembic and sqlalchemy, librosa's audioread, cffi's pycparser (soundfile's prebuilt
# binding loads _cffi_backend only); resemblyzer's `webrtcvad` is provided by webrtcvad-wheels.
set -eu
cd "$(git rev-parse --show-toplevel)"
PY=${PYTHON:-python3}
VK_PY=${VOICEKIT_PYTHON:-$PY}
EXCLUDE=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF '/.whl/' "$EXCLUDE" 2>/dev/null || echo '/.whl/' >> "$EXCLUDE"

WHEELS="
pyannote.audio==4.0.7 pyannote.core==6.1.0 pyannote.database==6.1.1 pyannote.metrics==4.2.0
pyannote.pipeline==4.1.0 asteroid-filterbanks==0.4.0
torch-audiomentations==0.12.0 julius==0.2.8 torch-pitch-shift==1.2.5 primePy==1.3
optuna==5.0.0 colorlog==6.12.0
opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2 opentelemetry-proto==1.45.2
opentelemetry-semantic-conventions==0.66b2 opentelemetry-exporter-otlp-proto-http==1.45.2
opentelemetry-exporter-otlp-proto-common==1.45.2 opentelemetry-exporter-http-transport==0.66b2
opentelemetry-exporter-otlp-common==0.66b2
resemblyzer==0.1.4 librosa==0.11.0 decorator==5.3.1 pooch==1.9.0 platformdirs==4.14.8
soundfile==0.14.0 cffi==2.1.1 soxr==1.1.0 webrtcvad-wheels==2.0.14.post1
"
mkdir -p .whl
rm -f .whl/*.whl   # one version of each: two stop the install there
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl $WHEELS
rm -rf .whl/eval
"$VK_PY" scripts/bench_gpu.py --eval-dir "${VOICEKIT_EVAL_DIR:-../shared/eval}" --copy-eval-to .whl/eval

n=$(ls .whl/*.whl | wc -l)
echo "wheels: $n files, $(du -cb .whl/*.whl | tail -1 | awk '{printf "%.1f MiB", $1 / 1048576}')"
echo ".whl/ in all: $(du -sb .whl | awk '{printf "%.1f MiB", $1 / 1048576}')"
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "working tree that travels (tracked + untracked, not ignored): $(echo "$tree" | awk '{printf "%.1f MiB", $1 / 1048576}')"
echo "both together must stay under 64 MiB"
