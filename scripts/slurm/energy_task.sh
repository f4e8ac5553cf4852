#!/usr/bin/env bash
# One group of `miniquant energy` methods, whatever engine started it:
#   energy_task.sh OUT INDEX GROUP [miniquant energy options...]
# GROUP is a comma-separated scheme list (fp32,int8-per-channel,int4-g64+a8). fp32 is added when the group lacks it,
# because each method's savings_vs_fp32 is measured against the fp32 run of the same process. Group 0
# also runs the GPT-2-small-shaped body; the others pass --no-gpt2. Writes a complete 28-energy folder
# (summary.json, rounds.csv, manifest.json, report.txt, README.md) to OUT/task-INDEX. There is no merge of those
# folders yet (scripts/slurm/README.md says what one would take).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: energy_task.sh OUT INDEX GROUP [miniquant energy options...]" >&2
  exit 2
fi
out=$1 index=$2 group=$3
shift 3
mq_prog=energy_task
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# INDEX names the folder OUT/task-INDEX: digits only, so it cannot lead outside OUT.
mq_folder OUT "$out"
mq_index INDEX "$index"
mq_binary
mq_threads_from_slurm
IFS=, read -ra methods <<<"$group"
[ ${#methods[@]} -gt 0 ] || mq_die "group $index is empty"
has_fp32=0
for m in "${methods[@]}"; do
  case $m in float32 | fp32) has_fp32=1 ;; esac
done
[ "$has_fp32" = 1 ] || methods=(fp32 "${methods[@]}")
gpt2=()
if [ "$index" != 0 ]; then
  gpt2=(--no-gpt2)
  for a in "$@"; do
    case $a in --no-gpt2) gpt2=() ;; esac  # given already
  done
fi
echo "energy_task: group $index (${methods[*]}) on $(hostname), ${OMP_NUM_THREADS:-default} threads -> $out/task-$index"
exec "$MQ_BIN" energy --schemes "${methods[@]}" "${gpt2[@]}" --out "$out/task-$index" "$@"
