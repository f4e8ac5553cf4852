#!/usr/bin/env bash
# One shard of `miniquant mixed`, whatever engine started it (a Slurm array task, GNU parallel, a shell):
#   mixed_task.sh STAGE SHARD SHARDS OUT [miniquant mixed options...]
# runs `miniquant mixed --stage STAGE --shard SHARD/SHARDS --out OUT/shard-SHARD`, so every shard writes its
# own folder (on a shared filesystem when shards run on several machines). OUT/runs and every other
# OUT/shard-*/runs are passed as --runs: a unit finished by any earlier run, even one split into another shard
# count, is skipped, and the auto stage reads every shard's sensitivities and configurations.
# The binary is $MQ_BIN (default: build/release/bin/miniquant of this checkout). With Slurm, OpenMP gets the
# task's CPUs unless OMP_NUM_THREADS is set.
set -euo pipefail
if [ $# -lt 4 ]; then
  echo "usage: mixed_task.sh STAGE SHARD SHARDS OUT [miniquant mixed options...]" >&2
  exit 2
fi
stage=$1 shard=$2 shards=$3 out=$4
shift 4
mq_prog=mixed_task
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# SHARD names the folder OUT/shard-SHARD: digits only and below SHARDS, checked before it is created.
mq_count SHARDS "$shards"
mq_index SHARD "$shard"
[ "$shard" -lt "$shards" ] || mq_die "SHARD $shard must be below SHARDS $shards"
mq_folder OUT "$out"
mq_binary
mq_threads_from_slurm
mine="$out/shard-$shard"
mkdir -p "$mine"
runs=()
for d in "$out"/runs "$out"/shard-*/runs; do
  [ -d "$d" ] && [ "$d" != "$mine/runs" ] && runs+=(--runs "$d")
done
echo "mixed_task: shard $shard/$shards, stage $stage, on $(hostname) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))," \
  "${OMP_NUM_THREADS:-default} threads -> $mine"
exec "$MQ_BIN" mixed --stage "$stage" --shard "$shard/$shards" --out "$mine" "${runs[@]}" "$@"
