#!/usr/bin/env bash
# ctest tools_report_smoke: tools/report turns anvil-bench CSV output (gemm
# f32 and bf16, conv) and --peak into report/README.md and, where gnuplot is
# installed, PNG plots.  Tiny shapes and three short trials: plumbing only.
#   report_smoke.sh ANVIL_BENCH TOOLS_REPORT
set -euo pipefail
bench=$1
report=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quick=(--mode perf --vs onednn --trials 3 --min-trial-time 0.01 --peak-gflops 100)
"$bench" gemm --dt f32 "${quick[@]}" --shape 32x32x32 --shape 1x256x256 --shape 64x48x40 \
  --csv="$work/gemm_f32_perf.csv" >"$work/gemm_f32_perf.txt" 2>&1
"$bench" gemm --dt bf16 "${quick[@]}" --shape 1x128x128 --shape 32x64x64 \
  --csv="$work/gemm_bf16_perf.csv" >"$work/gemm_bf16_perf.txt" 2>&1
"$bench" conv --dt f32 --mode perf --vs onednn --trials 3 --min-trial-time 0.01 \
  'mb1ic16ih9oc24oh9kh3ph1n"l1"' 'g16mb1ic16ih8oc16oh8kh3ph1n"dw"' \
  --csv="$work/conv_f32_perf.csv" >"$work/conv_f32_perf.txt" 2>&1
"$bench" gemm --dt f32 --mode check --shape 8x8x8 >"$work/gemm_f32_check.txt" 2>&1
printf 'fp32 FMA peak  1T:    100.0 GFLOP/s  (given)\nread 256 MiB   1T:     20.0 GB/s\n' >"$work/peak.txt"
python3 "$report" --dir "$work"
md=$work/README.md
test -s "$md"
for want in "## gemm_f32" "## gemm_bf16" "## conv_f32" "| 32x32x32 |" "gemm_f32_check.txt"; do
  grep -qF "$want" "$md" || { echo "report_smoke: '$want' missing from README.md:"; cat "$md"; exit 1; }
done
if command -v gnuplot >/dev/null 2>&1; then
  for png in gemm_f32_gflops gemm_f32_pct_peak gemm_f32_roofline gemm_bf16_gflops conv_f32_gflops; do
    test -s "$work/$png.png" || { echo "report_smoke: $png.png missing"; ls -l "$work"; exit 1; }
    grep -qF "($png.png)" "$md" || { echo "report_smoke: $png.png not linked"; exit 1; }
  done
  echo "report_smoke: README.md and $(ls "$work"/*.png | wc -l) plots"
else
  echo "report_smoke: README.md written (no gnuplot: plots not checked)"
fi
