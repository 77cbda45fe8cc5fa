#!/bin/bash
# torchtitan 0.2.2 training the Llama-3.2-1B shape of 06_train_step on one GPU, offline.
# Usage: OUT=DIR WHEELS=DIR bash peers/torchtitan/run.sh RUN...   (RUN: A, B, E or P)
#   A  torchtitan's defaults: fp32 weights, gradients and AdamW states, bf16 autocast,
#      torch.compile, gradient clipping at 1.0; profiles step 30 (trace.json.gz)
#   B  all bf16 (--training.dtype bfloat16): weights, gradients and AdamW states, as
#      06_train_step's `causal`
#   E  A without the profiler
#   P  B, profiling step 30 (trace.json.gz), as A does
# Each run writes OUT/<RUN>/log.txt (torchtitan's log, one "step: ... tps: ..." line per
# step) and env.txt; A and P also OUT/<RUN>/trace.json.gz. WHEELS holds torchtitan and what it needs
# beyond the GPU machine's image (datasets, torchdata, tyro, dill, multiprocess,
# docstring_parser, typeguard); without WHEELS, they must already be installed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/torchtitan_runs}
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$WHEELS"/*.whl 2>&1 | tail -3
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$HERE:${PYTHONPATH:-}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1
export PYTORCH_ALLOC_CONF="expandable_segments:True"   # as torchtitan's run_train.sh sets it

COMMON="--experimental.custom_import titan_1b --model.name llama3_1b --model.flavor 1B
  --model.hf_assets_path $HERE/tokenizer --training.dataset c4_test
  --training.dataset_path $HERE/c4_local
  --training.local_batch_size 8 --training.seq_len 2048 --training.steps 30
  --compile.enable --activation_checkpoint.mode none
  --metrics.log_freq 1 --metrics.disable_color_printing --metrics.enable_tensorboard"

for run in "$@"; do
  case $run in
    A) flags="--profiling.enable_profiling --profiling.profile_freq 30" ;;
    B) flags="--training.dtype bfloat16" ;;
    E) flags="" ;;
    P) flags="--training.dtype bfloat16 --profiling.enable_profiling --profiling.profile_freq 30" ;;
    *) echo "run.sh: no run named $run (A, B, E or P)" >&2; exit 2 ;;
  esac
  dest=$OUT/$run; mkdir -p "$dest"; rm -rf "/tmp/titan_$run"
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    python3 -c "import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__)"
  } > "$dest/env.txt" 2>&1
  # shellcheck disable=SC2086
  python3 -m torch.distributed.run --standalone --nproc_per_node=1 -m torchtitan.train \
    $COMMON --job.dump_folder "/tmp/titan_$run" $flags > "$dest/log.txt" 2>&1
  echo "run $run: exit $?"
  trace=$(find "/tmp/titan_$run" -name 'rank0_trace.json' 2>/dev/null | head -1)
  [ -n "$trace" ] && gzip -c "$trace" > "$dest/trace.json.gz"
done
