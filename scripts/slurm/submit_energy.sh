#!/usr/bin/env bash
# Submits `miniquant energy` to Slurm as a job array, one task per group of methods (energy_array.sbatch):
#   scripts/slurm/submit_energy.sh [options] OUT GROUP [GROUP ...] [-- miniquant energy options...]
# e.g. submit_energy.sh runs/energy fp32,fp16,bf16 int8-per-channel,int8-per-channel+a8 int4-g64,int4-g64+a8
# Each task writes a complete 28-energy folder, OUT/task-<i>; nothing merges them yet (README.md here).
# Submitting again re-measures every group (energy has no per-method resume).
set -euo pipefail
usage() {
  cat >&2 <<'USAGE'
usage: submit_energy.sh [options] OUT GROUP [GROUP ...] [-- miniquant energy options...]
  --max-parallel K   run at most K groups at once (default: all)
  --cpus N           CPUs and OpenMP threads per group (default 2)
  --sbatch "ARGS"    more sbatch options (partition, account, --time, ...)
  --dry-run          print the sbatch command, submit nothing
USAGE
  exit 2
}
mq_prog=submit_energy
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
max_parallel="" cpus=2 dry=0 site=()
while [ $# -gt 0 ]; do
  case $1 in
    --max-parallel) mq_value "$@"; max_parallel=$2; shift 2 ;;
    --cpus) mq_value "$@"; cpus=$2; shift 2 ;;
    --sbatch) mq_value "$@"; read -ra site <<<"$2"; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h | --help) usage ;;
    -*) echo "submit_energy: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
mq_folder OUT "$1"
out=$(realpath -m "$1")
shift
groups=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do groups+=("$1"); shift; done
[ ${#groups[@]} -gt 0 ] || usage
max_parallel=${max_parallel:-${#groups[@]}}
mq_count --max-parallel "$max_parallel"
mq_count --cpus "$cpus"
mq_binary
command -v sbatch >/dev/null || mq_die "sbatch not found (is this a Slurm login node?)"
args=(--export="ALL,MQ_ROOT=$mq_root,MQ_BIN=$MQ_BIN" "${site[@]}" --array="0-$((${#groups[@]} - 1))%$max_parallel"
  --cpus-per-task="$cpus" --output="$out/logs/%x_%A_%a.out" "$mq_root/scripts/slurm/energy_array.sbatch" "$out" "${groups[@]}" "$@")
if [ "$dry" = 1 ]; then
  printf 'sbatch'; printf ' %q' "${args[@]}"; printf '\n'
  exit 0
fi
mkdir -p "$out/logs"
echo "energy_array=$(sbatch --parsable "${args[@]}" | cut -d';' -f1)"
for i in "${!groups[@]}"; do echo "  task $i: ${groups[$i]} -> $out/task-$i"; done
