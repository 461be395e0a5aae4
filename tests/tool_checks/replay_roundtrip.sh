#!/usr/bin/env bash
# ctest tools_replay_roundtrip: ANVIL_VERBOSE=2 exec lines replayed by
# `anvil-bench replay` run the same calls.  A mix of anvil-bench check runs
# (f32 BLAS and planned, bf16, strided batches, int8 BLAS, the int8 and f32 matmul handles
# with full chains, convolutions with attributes) is logged; the log is replayed in
# check mode (which must pass), logged again, and every exec line of the
# first log must reappear in the second, field for field but the timing.
#   replay_roundtrip.sh ANVIL_BENCH
set -euo pipefail
bench=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ANVIL_VERBOSE=2
run() { "$bench" "$@" >>"$work/original.log" 2>&1; }
run gemm --dt f32 --mode check --shape 17x33x9 --trans NT
run gemm --dt f32 --mode check --planned --shape 5x40x31
run gemm --dt bf16 --mode check --shape 7x19x24
run gemm --dt f32 --mode check --shape 6x9x40:6x40x17 --trans TN
run gemm --dt bf16 --mode check --shape 1x5x12:4x12x33
run gemm --dt s8s8s32 --mode check --shape 3x65x64 --trans NT
run gemm --dt u8s8s32 --mode check --planned --dst u8 --attr-scales=per_oc:0.01 \
  --attr-zero-points=src:3,wei:2,dst:5 --bias --attr-post-ops=leaky_relu:0.25+add:bf16:per_oc+clip:-3:100 \
  --shape 9x48x40
run gemm --dt f32 --mode check --planned --dst bf16 --attr-scales=common:0.5 --bias \
  --attr-post-ops=gelu_erf+add:f32 --shape 11x37x23 --trans TN
run conv --dt u8s8u8 --mode check --bias --attr-scales=per_oc:0.0625 --attr-zero-points=src:3,dst:5 \
  --attr-post-ops=relu 'mb2ic16ih9iw7oc24oh5ow4kh3kw3sh2sw2ph1pw1'
run conv --dt f32 --mode check 'g16mb1ic16ih8oc16oh8kh3ph1'

# Field lists without the timing (and the thread count the replay may pick).
signatures() { grep -o 'anvil_verbose,exec,.*' "$1" | sed -E 's/,time_us=[0-9.e+-]+//' | sort -u; }
signatures "$work/original.log" >"$work/original.sig"
n=$(wc -l <"$work/original.sig")
if [[ $n -lt 10 ]]; then
  echo "replay_roundtrip: only $n distinct exec lines were logged:"; cat "$work/original.log"; exit 1
fi
rc=0
"$bench" replay "$work/original.log" --mode check >"$work/replay.log" 2>&1 || rc=$?
if [[ $rc -ne 0 ]]; then
  echo "replay_roundtrip: anvil-bench replay exited $rc:"; cat "$work/replay.log"; exit 1
fi
grep -q "0 failure(s)" "$work/replay.log"
signatures "$work/replay.log" >"$work/replay.sig"
missing=$(comm -23 "$work/original.sig" "$work/replay.sig")
if [[ -n $missing ]]; then
  echo "replay_roundtrip: exec lines the replay did not reproduce:"; echo "$missing"
  echo "--- replay log:"; grep -v '^anvil_verbose,cache' "$work/replay.log" | head -80
  exit 1
fi
echo "replay_roundtrip: $n distinct exec lines replayed and reproduced"
grep '^# replay [0-9]' "$work/replay.log"
