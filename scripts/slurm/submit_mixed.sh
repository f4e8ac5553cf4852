#!/usr/bin/env bash
# Submits a sharded `miniquant mixed` to Slurm: a job array of SHARDS tasks (mixed_array.sbatch), with --auto
# a second array for the auto stage once the first has succeeded, then the merge (mixed_merge.sbatch) once
# the last array has succeeded (--dependency=afterok). Prints one "name=jobid" line per job.
#   scripts/slurm/submit_mixed.sh [options] SHARDS OUT [-- miniquant mixed options...]
# The options after -- go to every task and to the merge: unit keys hash them, so they must be the same.
# Submitting the same command again retries what failed; finished units are skipped.
set -euo pipefail
usage() {
  cat >&2 <<'USAGE'
usage: submit_mixed.sh [options] SHARDS OUT [-- miniquant mixed options...]
  --max-parallel K   run at most K shards at once (--array=0-<SHARDS-1>%K; default SHARDS)
  --cpus N           CPUs and OpenMP threads per shard (default 2; the merge takes 1)
  --stage S          what each shard measures: run (sensitivities, then configurations; default), configs, sensitivity
  --auto             then a second array: the auto stage (allocate from the sensitivities, measure the maps); needs --stage run
  --allow-partial    the merge writes results although units are missing (it names them)
  --per-machine      the merge also reports each machine alone (OUT/by-machine/)
  --sbatch "ARGS"    more sbatch options for every job (partition, account, --time, ...)
  --dry-run          print the sbatch commands, submit nothing
USAGE
  exit 2
}
mq_prog=submit_mixed
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
max_parallel="" cpus=2 stage=run auto=0 dry=0
merge_opts=() site=()
while [ $# -gt 0 ]; do
  case $1 in
    --max-parallel) mq_value "$@"; max_parallel=$2; shift 2 ;;
    --cpus) mq_value "$@"; cpus=$2; shift 2 ;;
    --stage) mq_value "$@"; stage=$2; shift 2 ;;
    --auto) auto=1; shift ;;
    --allow-partial | --per-machine) merge_opts+=("$1"); shift ;;
    --sbatch) mq_value "$@"; read -ra site <<<"$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h | --help) usage ;;
    -*) echo "submit_mixed: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
mq_study_args "$@"
shards=$mq_shards out=$mq_out
set -- "${mq_opts[@]}"
max_parallel=${max_parallel:-$shards}
mq_count --max-parallel "$max_parallel"
mq_count --cpus "$cpus"
mq_check_stage "$stage" "$auto"
mq_binary
command -v sbatch >/dev/null || mq_die "sbatch not found (is this a Slurm login node?)"
[ "$dry" = 1 ] || mkdir -p "$out/logs"  # Slurm does not create the folder of --output

common=(--export="ALL,MQ_ROOT=$mq_root,MQ_BIN=$MQ_BIN" "${site[@]}")
submit() {  # name, sbatch arguments...: prints name=jobid, sets $jobid
  local name=$1
  shift
  if [ "$dry" = 1 ]; then
    jobid="<$name>"
    printf 'sbatch'; printf ' %q' "$@"; printf '\n'
  else
    jobid=$(sbatch --parsable "$@" | cut -d';' -f1)
  fi
  echo "$name=$jobid"
}
array=(--array="0-$((shards - 1))%$max_parallel" --cpus-per-task="$cpus")
submit run_array "${common[@]}" "${array[@]}" --output="$out/logs/%x_%A_%a.out" \
  "$mq_root/scripts/slurm/mixed_array.sbatch" "$shards" "$out" "$stage" "$@"
last=$jobid
if [ "$auto" = 1 ]; then
  submit auto_array "${common[@]}" "${array[@]}" --job-name=mq-mixed-auto --dependency="afterok:$last" --kill-on-invalid-dep=yes \
    --output="$out/logs/%x_%A_%a.out" "$mq_root/scripts/slurm/mixed_array.sbatch" "$shards" "$out" auto "$@"
  last=$jobid
fi
submit merge "${common[@]}" --dependency="afterok:$last" --kill-on-invalid-dep=yes --output="$out/logs/%x_%j.out" \
  "$mq_root/scripts/slurm/mixed_merge.sbatch" "$out" "$auto" "$@" "${merge_opts[@]}"
