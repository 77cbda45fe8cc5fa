#!/bin/bash
# One session: torchtitan's runs and 06_train_step's `causal` one after another on one GPU,
# as docs/peers/<gpu>/torchtitan/2026-12-06T18-49/ was recorded.
# Usage: OUT=DIR WHEELS=DIR bash peers/torchtitan/session.sh
# Writes OUT/<run>/ for the runs B1 A1 B2 E1 A2 B3 (run.sh's letters) and OUT/causal/r0..r2,
# our example's three fresh repeats (scripts/record.py), after B1.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-/tmp/torchtitan_session}
mkdir -p "$OUT"
one() { # one NAME LETTER
  OUT=/tmp/_tt_$1 bash "$HERE/run.sh" "$2" && rm -rf "${OUT:?}/$1" && mv "/tmp/_tt_$1/$2" "$OUT/$1"
  rm -rf "/tmp/_tt_$1"
}
one B1 B
python3 "$ROOT/scripts/record.py" 06_train_step --variants causal --repeats 3 --gpus 1
slug=$(PYTHONPATH=$ROOT/docs/_ext python3 -c \
  "import torch; from tracesite.recordings import gpu_slug; print(gpu_slug(torch.cuda.get_device_name()))")
mkdir -p "$OUT/causal" && cp -r "$ROOT/docs/recordings/$slug/06_train_step/causal/." "$OUT/causal/"
one A1 A
one B2 B
one E1 E
one A2 A
one B3 B
