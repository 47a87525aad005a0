#!/usr/bin/env bash
# One run of everything that needs a CUDA GPU, with one summary table at the end (docs/precision.md).
#
#   bash benchmarks/gpu_check.sh
#
# On a machine without a GPU it prints one "no GPU" line and exits 0. On a GPU machine it uses .venv (creating it
# as the README does, with plain `torch`: the default PyPI wheel for Linux is the CUDA build), then runs
#   hf-genfix doctor --device cuda --dtype bfloat16
#   the probe tests (each patch folder's test_probe_proves_the_patch) and the host-sync test (tests/test_device.py)
#     on cuda in bfloat16 with
#     the sdpa kernel, and again with flash_attention_2 when flash_attn is installed
#   the benchmarks prepare_inputs.py, right_padding.py, sliding_window_decode.py (--device cuda, few pairs)
# Every step has a timeout and the whole run stops starting steps after GPU_CHECK_BUDGET seconds (default 470,
# under 8 minutes); a failed or timed-out step is a row of the table, never the end of the run. Exit status 0 when
# every step that ran passed, 1 otherwise.
#
# Variables: GPU_CHECK_DEVICE (default cuda), GPU_CHECK_DTYPE (bfloat16), GPU_CHECK_BUDGET (470),
# GPU_CHECK_LOGS (a new temporary folder), PYTHON (an interpreter to use instead of .venv's; it must import
# hf_genfix, e.g. with PYTHONPATH=src). GPU_CHECK_DEVICE=cpu runs the same steps on the CPU (how the script itself
# is tested; it skips the GPU detection).
set -u

cd "$(dirname "$0")/.." || exit 1
DEVICE=${GPU_CHECK_DEVICE:-cuda}
DTYPE=${GPU_CHECK_DTYPE:-bfloat16}
BUDGET=${GPU_CHECK_BUDGET:-470}
LOGS=${GPU_CHECK_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/hf_genfix_gpu_check.XXXXXX")}
mkdir -p "$LOGS"
START=$SECONDS

if [ "$DEVICE" != "cpu" ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu_check: no GPU (nvidia-smi not found): nothing to run"
    exit 0
  fi
  if ! timeout 20 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu_check: no GPU (nvidia-smi lists none): nothing to run"
    exit 0
  fi
fi

ROWS=()    # "step|status|seconds|detail"
FAILED=0

row() {  # step status seconds detail
  ROWS+=("$1|$2|$3|$4")
  case "$2" in ok|skipped) ;; *) FAILED=1 ;; esac
}

remaining() { echo $(( BUDGET - (SECONDS - START) )); }

# step NAME LIMIT_S COMMAND...: runs COMMAND with a timeout (never past the budget), logs it, adds a table row.
step() {
  local name=$1 limit=$2; shift 2
  local left; left=$(remaining)
  if [ "$left" -le 5 ]; then
    row "$name" "NOT RUN" 0 "out of time (budget ${BUDGET}s)"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local log="$LOGS/$name.log" began=$SECONDS rc
  echo "gpu_check: $name (timeout ${limit}s) ..." >&2
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local took=$(( SECONDS - began )) detail
  # The verdict line when there is one (pytest's counts, doctor's OK/FAILED), else the last line of the log.
  detail=$(grep -E '[0-9]+ (passed|failed|error)|^(OK|FAILED)|target <=' "$log" | tail -n 1)
  [ -z "$detail" ] && detail=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1)
  detail=$(printf '%s' "$detail" | cut -c1-110 | tr '|' '/')
  if [ "$rc" -eq 0 ]; then
    row "$name" "ok" "$took" "$detail"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    row "$name" "TIMEOUT" "$took" "after ${limit}s; log $log"
  else
    row "$name" "FAIL rc=$rc" "$took" "$detail"
  fi
}

# -- the interpreter ------------------------------------------------------------------------------------------------
if [ -n "${PYTHON:-}" ]; then
  PY=$PYTHON
  row "setup" "ok" 0 "PYTHON=$PY"
else
  PY=.venv/bin/python
  if [ ! -x "$PY" ]; then
    # The README's set-up, with plain torch (the CUDA build on a GPU machine; the README pins the CPU build).
    step setup 300 bash -c "python3 -m venv .venv && .venv/bin/pip install torch transformers -e '.[test]'"
  else
    row "setup" "ok" 0 "reusing .venv"
  fi
fi
HFG=("$PY" -m hf_genfix)

if [ "$DEVICE" != "cpu" ]; then
  if ! timeout 120 "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" \
      >"$LOGS/cuda.log" 2>&1; then
    row "cuda" "FAIL" 0 "nvidia-smi sees a GPU but torch in $PY cannot use it (a CPU build? see $LOGS/cuda.log)"
  fi
fi
step environment 120 "$PY" -c "
import torch, transformers
cuda = torch.cuda.is_available()
print(f'torch {torch.__version__} (cuda {torch.version.cuda}), transformers {transformers.__version__}, '
      f'{torch.cuda.get_device_name(0) if cuda else \"no cuda device\"}')"

# -- correctness on the device ----------------------------------------------------------------------------------------
step doctor 150 "${HFG[@]}" doctor --device "$DEVICE" --dtype "$DTYPE" --output "$LOGS/doctor.json"
PYTEST=("$PY" -m pytest -q -p no:cacheprovider --genfix-device "$DEVICE" --genfix-dtype "$DTYPE")
step tests-sdpa 150 "${PYTEST[@]}" --genfix-attn sdpa -k "test_probe_proves_the_patch or test_device" patches tests/test_device.py
if "$PY" -c "import flash_attn" >/dev/null 2>&1; then
  step tests-flash-attention 120 "${PYTEST[@]}" --genfix-attn flash_attention_2 -k test_probe_proves_the_patch patches
else
  row "tests-flash-attention" "skipped" 0 "flash_attn is not installed"
fi

# -- the benchmarks ---------------------------------------------------------------------------------------------------
BENCH=(--device "$DEVICE" --dtype "$DTYPE")
step bench-prepare-inputs 60 "$PY" benchmarks/prepare_inputs.py "${BENCH[@]}" --pairs 3 --new 32 --calls 2000
step bench-right-padding 60 "$PY" benchmarks/right_padding.py "${BENCH[@]}" --pairs 3 --new 16 --repeat 1
step bench-sliding-window 60 "$PY" benchmarks/sliding_window_decode.py "${BENCH[@]}" --pairs 3 --new 16

# -- the table ----------------------------------------------------------------------------------------------------------
echo
echo "hf_genfix gpu_check: device $DEVICE, dtype $DTYPE, $(( SECONDS - START ))s (budget ${BUDGET}s), logs in $LOGS"
printf '%-22s %-12s %6s  %s\n' "step" "status" "secs" "detail"
for r in "${ROWS[@]}"; do
  IFS='|' read -r name status took detail <<<"$r"
  printf '%-22s %-12s %6s  %s\n' "$name" "$status" "$took" "$detail"
done
if [ "$FAILED" -eq 0 ]; then echo "gpu_check: OK"; else echo "gpu_check: FAILED (see the logs)"; fi
exit "$FAILED"
