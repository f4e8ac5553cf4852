#!/usr/bin/env bash
# Measures the commands each lab handout names and writes their durations into the handouts, in place of
# the TIME_CHECK / TIME_RUN / TIME_ROOFLINE / TIME_SWEEP marks (and TIME_BUILD where a handout has it). Run it on a quiet machine (the
# numbers are wall-clock times of this machine: the handouts say they were taken on the 2-vCPU VM), from the
# repository root, after `cmake --build --preset release -j 2` (the `lab check` and run commands use that build).
#   bash scripts/lab_times.sh [NN ...]     # default: every lab whose handout still has a TIME_ mark
# Each lab's build is timed from a fresh configure in its own folder under $TMPDIR (removed afterwards), with
# the handout's job count (-j 2). The runs write into $TMPDIR too, never into labs/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/bin/miniquant
[[ -x $bin ]] || { echo "lab_times.sh: $bin is missing: build it first (cmake --build --preset release -j 2)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mq_lab_times.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Seconds a command took, printed as the handouts print durations: "42 s", "3.5 min".
took() {
  local t0 t1 s
  t0=$(date +%s.%N)
  "$@" >"$tmp/last.log" 2>&1 || { echo "lab_times.sh: failed: $*" >&2; tail -5 "$tmp/last.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }')
  if ((s < 90)); then echo "$s s"; else awk -v s="$s" 'BEGIN { printf "%.1f min", s / 60 }'; fi
}

# Whether a handout still has a mark (a mark already replaced is not timed again).
has() { grep -q "$2" "$1"; }

# Replaces one mark in a handout (the mark must be there).
put() {
  local file=$1 mark=$2 value=$3
  grep -q "$mark" "$file" || { echo "lab_times.sh: $file has no $mark" >&2; exit 1; }
  sed -i "s|$mark|$value|" "$file"
  echo "$file: $mark = $value"
}

fresh_build() {  # fresh_build NN targets...: configure a new folder, build the targets with -j 2
  local nn=$1
  shift
  local dir="$tmp/build$nn"
  local tgt=()
  for t in "$@"; do tgt+=(--target "$t"); done
  cmake --preset release -B "$dir" >/dev/null
  cmake --build "$dir" "${tgt[@]}" -j 2
  rm -rf "$dir"
}

labs=("$@")
if ((${#labs[@]} == 0)); then
  for d in labs/0*/; do grep -q "TIME_" "$d/README.md" && labs+=("$(basename "$d" | cut -c1-2)"); done
fi
for nn in "${labs[@]}"; do
  readme=$(ls -d labs/"$nn"-*/README.md)
  # The handouts now state the build's cost without a mark (it compiles the library: minutes); a handout that
  # has the mark again gets the fresh build timed (each one compiles the whole library: ~10 min on 2 cores).
  if grep -q TIME_BUILD "$readme"; then
    case $nn in
      02) put "$readme" TIME_BUILD "$(took fresh_build 02 lab02 miniquant_cli)" ;;
      *) put "$readme" TIME_BUILD "$(took fresh_build "$nn" "lab$nn")" ;;
    esac
  fi
  case $nn in
    02)
      has "$readme" TIME_ROOFLINE && put "$readme" TIME_ROOFLINE "$(took "$bin" roofline --out "$tmp/roofline")"
      has "$readme" TIME_SWEEP && put "$readme" TIME_SWEEP "$(took "$bin" sweep --schemes lab02 --out "$tmp/sweep")"
      has "$readme" TIME_CHECK && put "$readme" TIME_CHECK "$(took "$bin" lab check 02 --run-dir "$tmp/sweep" --answers labs/02-pareto-curve/answers.md --reference --no-rebuild)"
      ;;
    04)
      has "$readme" TIME_RUN && put "$readme" TIME_RUN "$(took "$bin" energy --no-gpt2 --rounds 3 --warmup 1 --schemes fp32 int8-per-channel int4-g64 --splits none \
        --curve-rounds 0 --batch 1,4 --ppl-tokens 2048 --max-slots 100 --no-plot --no-fp32-check --out "$tmp/run04")"
      has "$readme" TIME_CHECK && put "$readme" TIME_CHECK "$(took "$bin" lab check 04 --reference --no-rebuild)"
      ;;
    05)
      has "$readme" TIME_RUN && put "$readme" TIME_RUN "$(took "$bin" mixed --configs labs/05-mixed-precision/configs --out "$tmp/run05" --rounds 2 --gens 1 \
        --ppl-tokens 2048 --max-slots 100 --sensitivity-tokens 512 --calibration 8 --prompt-tokens 16 --gen-tokens 8 \
        --sensitivity-recipes int2-g64,int4-g64 --no-plot)"
      has "$readme" TIME_CHECK && put "$readme" TIME_CHECK "$(took "$bin" lab check 05 --reference --no-rebuild)"
      ;;
    *) put "$readme" TIME_CHECK "$(took "$bin" lab check "$nn" --reference --no-rebuild)" ;;
  esac
done
