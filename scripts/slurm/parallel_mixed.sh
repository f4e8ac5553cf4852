#!/usr/bin/env bash
# A sharded `miniquant mixed` with GNU parallel (Debian `parallel`), over local slots or ssh hosts:
#   scripts/slurm/parallel_mixed.sh [options] SHARDS OUT [-- miniquant mixed options...]
# runs the SHARDS shards (scripts/slurm/mixed_task.sh; shard i into OUT/shard-i), with --auto then the auto
# stage the same way, then the merge here (scripts/slurm/mixed_merge.sh). Each stage keeps a joblog,
# OUT/logs/parallel-<stage>.joblog, and runs with --resume-failed: the same command again runs only the shards
# that failed or never ran (and inside them, finished units are skipped).
set -euo pipefail
usage() {
  cat >&2 <<'USAGE'
usage: parallel_mixed.sh [options] SHARDS OUT [-- miniquant mixed options...]
  --slots N          local: run N shards at once (default 2)
  --hosts FILE       ssh: GNU parallel's --sshloginfile (one host a line, "4/node1" for 4 slots; ":" is this
                     machine); the checkout, the binary and OUT must be at the same paths on every host
  --threads N        OpenMP threads per shard (default: local, cores / slots; ssh, each host's default)
  --stage S          run (default), configs or sensitivity
  --auto             then the auto stage, sharded the same way (needs --stage run)
  --allow-partial, --per-machine   passed to the merge
USAGE
  exit 2
}
mq_prog=parallel_mixed
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
slots=2 hosts="" threads="" stage=run auto=0
merge_opts=()
while [ $# -gt 0 ]; do
  case $1 in
    --slots) slots=${2:?}; shift 2 ;;
    --hosts) hosts=${2:?}; shift 2 ;;
    --threads) threads=${2:?}; shift 2 ;;
    --stage) stage=${2:?}; shift 2 ;;
    --auto) auto=1; shift ;;
    --allow-partial | --per-machine) merge_opts+=("$1"); shift ;;
    -h | --help) usage ;;
    -*) echo "parallel_mixed: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
mq_study_args "$@"
shards=$mq_shards out=$mq_out
set -- "${mq_opts[@]}"
mq_count --slots "$slots"
mq_check_stage "$stage" "$auto"
command -v parallel >/dev/null || mq_die "GNU parallel not found (apt-get install parallel)"
[ -z "$hosts" ] || [ -r "$hosts" ] || mq_die "--hosts $hosts is not readable"
mq_binary
if [ -z "$threads" ] && [ -z "$hosts" ]; then threads=$(($(nproc) / slots)); [ "$threads" -ge 1 ] || threads=1; fi
if [ -n "$threads" ]; then
  mq_count --threads "$threads"
  export OMP_NUM_THREADS=$threads
fi
mkdir -p "$out/logs"

where=(-j "$slots")
# Over ssh: the same working directory on every host (relative paths in the options mean the same files).
[ -z "$hosts" ] || where=(--sshloginfile "$hosts" --workdir . --env MQ_BIN --env OMP_NUM_THREADS)
run_stage() {  # stage, miniquant options...: every shard of the stage; exits when one failed
  local s=$1 log="$out/logs/parallel-$1.joblog"
  shift
  echo "== parallel: stage $s, $shards shards, joblog $log"
  # -q: the options reach miniquant as given (spaces, quotes), locally and over ssh.
  if ! parallel -q --joblog "$log" --resume-failed --line-buffer --tagstring "shard {}" "${where[@]}" \
    bash "$mq_root/scripts/slurm/mixed_task.sh" "$s" "{}" "$shards" "$out" "$@" ::: $(seq 0 $((shards - 1))); then
    echo "parallel_mixed: stage $s: some shards failed ($log); run the same command again to retry them" >&2
    exit 1
  fi
}
run_stage "$stage" "$@"
[ "$auto" = 0 ] || run_stage auto "$@"
echo "== merge"
bash "$mq_root/scripts/slurm/mixed_merge.sh" "$out" "$auto" "$@" "${merge_opts[@]}"
