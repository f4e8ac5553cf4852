# What the scripts of scripts/slurm/ share (sourced, after setting mq_prog to the script's name): the checkout,
# the binary, and the checks of their arguments, made before anything is created. Every check failing prints
# one line and exits 2.
mq_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mq_die() {
  echo "$mq_prog: $*" >&2
  exit 2
}
mq_count() {  # name, value: a positive integer below 100000
  [[ $2 =~ ^[1-9][0-9]{0,4}$ ]] || mq_die "$1 must be a positive integer, got $2"
}
mq_index() {  # name, value: 0 or a positive integer below 100000, digits only (it becomes part of a folder name)
  [[ $2 =~ ^(0|[1-9][0-9]{0,4})$ ]] || mq_die "$1 must be an integer >= 0 (digits only), got '$2'"
}
mq_folder() {  # name, value: a folder to write into; not empty, no line break
  [ -n "$2" ] || mq_die "$1 is empty: give the output folder"
  [[ $2 != *$'\n'* ]] || mq_die "$1 contains a line break"
}
mq_flag01() {  # name, value: 0 or 1
  [[ $2 =~ ^[01]$ ]] || mq_die "$1 must be 0 or 1, got '$2'"
}
mq_value() {  # option, remaining arguments: the option's value must be there and not empty
  [ $# -ge 2 ] && [ -n "$2" ] || mq_die "$1 needs a value"
}
mq_binary() {  # exports MQ_BIN: the given one, or this checkout's release build
  export MQ_BIN=${MQ_BIN:-$mq_root/build/release/bin/miniquant}
  [ -x "$MQ_BIN" ] || mq_die "$MQ_BIN is not an executable (build it, or set MQ_BIN)"
}
mq_threads_from_slurm() {  # OpenMP threads = the Slurm task's CPUs, unless OMP_NUM_THREADS is set
  if [ -z "${OMP_NUM_THREADS:-}" ] && [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then export OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK; fi
}
mq_study_args() {  # SHARDS OUT [-- miniquant mixed options...] -> mq_shards, mq_out (absolute), mq_opts
  [ $# -ge 2 ] || usage
  mq_count SHARDS "$1"
  mq_folder OUT "$2"
  mq_shards=$1
  mq_out=$(realpath -m "$2")
  shift 2
  if [ $# -gt 0 ]; then
    [ "$1" = -- ] || mq_die "expected -- before the miniquant options, got $1"
    shift
  fi
  mq_opts=("$@")
}
mq_check_stage() {  # stage, auto (0|1)
  case $1 in run | configs | sensitivity | energy) ;; *) mq_die "--stage must be run, configs, sensitivity or energy, got $1" ;; esac
  [ "$2" = 0 ] || [ "$1" = run ] ||
    mq_die "--auto needs --stage run (the allocation reads the sensitivities, its energy budgets the configurations)"
}
