#!/bin/bash
# Issue 9's GPU benchmark on the lent device machine (kind nvidia-h200), as one call of the device
# tool, from the root of the checkout it sends, after scripts/device/prepare_wheels.sh ran here:
#
#   run(command="bash scripts/device/run_gpu_bench.sh", carry=[".whl"], timeout_s=480)
#
# It installs the carried wheels into /tmp/site (no network there), then runs
#   scripts/bench_gpu.py --device cuda               -> $OUT/gpu-bench.json (float32, float16, bfloat16)
#   scripts/bench_gpu.py --device cpu --threads N …  -> $OUT/cpu-bench.json (a quick baseline on all cores)
# and tees everything to $OUT/log. Expected: about 1-3 minutes after the machine has started.
# PYTHON (default python3: the machine's, with torch + CUDA) and OUT can be set for a dry run elsewhere.
set -u -o pipefail
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/voicekit-bench-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYANNOTE_METRICS_ENABLED=false

bench() {
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "error: the carried wheels did not install: run scripts/device/prepare_wheels.sh first"; return 1; }
  export PYTHONPATH=/tmp/site:$PWD
  # voicekit.models lives in models/ (pyproject's package-dir); without an install a link maps it
  local link=0
  if [ ! -e voicekit/models ]; then ln -s ../models voicekit/models && link=1; fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$PY" -m pip list 2>/dev/null | grep -i -E '^(torch|torchaudio|numpy|scipy|numba|lightning|torchmetrics|protobuf|huggingface.hub|pandas|scikit-learn|matplotlib|setuptools) ' || true
  "$PY" scripts/bench_gpu.py --device cuda --eval-dir .whl/eval --json "$OUT/gpu-bench.json"
  local gpu=$?
  "$PY" scripts/bench_gpu.py --device cpu --threads "$(nproc)" --quick --chunk-batch 8 --plumbing-seconds 15 \
    --eval-dir .whl/eval --json "$OUT/cpu-bench.json"
  local cpu=$?
  if [ "$link" = 1 ]; then rm -f voicekit/models; fi
  echo "exit codes: cuda $gpu, cpu $cpu"
  return $((gpu || cpu))
}

bench 2>&1 | tee "$OUT/log"
