#!/usr/bin/env bash
# A real Slurm on localhost runs a sharded `miniquant mixed` (ctest slurm_mixed_slow, label slow):
#   tests/slurm/test_slurm.sh MINIQUANT_BINARY
# It starts munged, slurmctld and slurmd from Debian's packages (scripts/setup.sh installs them) with a fresh
# munge key and slurm.conf.in filled from `slurmd -C`, everything inside one temporary folder; submits a small
# study (4 configuration units on the shipped MiniGPT, small limits) with scripts/slurm/submit_mixed.sh as a
# 2-task job array and the dependent merge job, first with one task made to fail (the merge must not run),
# then again with the same command (the failed shard is retried, the finished one skipped); waits for them
# (bounded); and checks that the merged quality fields equal an unsharded run's exactly, that each task
# measured its own half, and that every unit records its host. It stops the jobs and the daemons it started (by their PIDs) and removes the folder, also when it
# fails. Exit 77 (ctest: skipped) with one line where the daemons cannot start: not root, a package missing,
# no munge key.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: test_slurm.sh MINIQUANT_BINARY" >&2
  exit 2
fi
bin=$(realpath "$1")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "not root: this single-node Slurm runs its daemons and jobs as root"
for c in munged mungekey slurmctld slurmd sbatch squeue scontrol scancel sinfo python3; do
  command -v "$c" >/dev/null || skip "$c is not installed (scripts/setup.sh installs munge, slurmctld, slurmd, slurm-client)"
done

state=$(mktemp -d /tmp/mq_slurm_test.XXXXXX)
chmod 711 "$state"  # munged refuses a socket whose folders others cannot traverse
declare -A pid=()
jobs_submitted=()

stop() {  # name: SIGTERM to it and its children (the reference run is a subshell), then SIGKILL after 10 s
  local p=${pid[$1]:-}
  [ -n "$p" ] || return 0
  pkill -P "$p" 2>/dev/null || true
  kill "$p" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$p" 2>/dev/null; then
    echo "cleanup: $1 (pid $p) ignored SIGTERM; killing it"
    kill -9 "$p" 2>/dev/null || true
  fi
  wait "$p" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  set +e
  # Jobs first: their processes are slurmstepd's, which outlive slurmd.
  if [ ${#jobs_submitted[@]} -gt 0 ] && [ -n "${pid[slurmctld]:-}" ]; then
    scancel "${jobs_submitted[@]}" 2>/dev/null
    for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done
  fi
  stop reference
  stop slurmd
  stop slurmctld
  stop munged
  # Anything still running from the state folder (a job step left behind) is ours: name it, stop it.
  local left
  left=$(pgrep -f "$state" || true)
  if [ -n "$left" ]; then
    echo "cleanup: processes left in $state: $left; killing them"
    # shellcheck disable=SC2086  # one PID a word
    kill -9 $left 2>/dev/null
    rc=1
  fi
  rm -rf "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- munge: a key of its own, a socket in the state folder -------------------------------------------------
mkdir -p "$state/munge" "$state/ctld" "$state/slurmd"
mungekey --create --keyfile="$state/munge/munge.key" 2>/dev/null || skip "mungekey cannot create a munge key"
munged -F --socket="$state/munge/munge.socket" --key-file="$state/munge/munge.key" --pid-file="$state/munge/munged.pid" \
  --log-file="$state/munge/munged.log" --seed-file="$state/munge/munged.seed" >"$state/munged.out" 2>&1 &
pid[munged]=$!
for _ in $(seq 50); do [ -S "$state/munge/munge.socket" ] && break; sleep 0.1; done
[ -S "$state/munge/munge.socket" ] || skip "munged cannot start: $(grep -m1 -i error "$state/munged.out" || tail -1 "$state/munged.out")"

# --- slurm.conf: this node as slurmd -C sees it, two free ports ----------------------------------------------
free_port() {  # a port nothing listens on, from a random start
  local p=$((20000 + RANDOM % 30000))
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
node=$(hostname -s)
node_line=$(slurmd -C | head -1)
ctld_port=$(free_port)
slurmd_port=$(free_port)
[ "$slurmd_port" != "$ctld_port" ] || slurmd_port=$((ctld_port + 1))
sed -e "s|@STATE@|$state|g" -e "s|@HOST@|$node|g" -e "s|@NODE@|$node|g" -e "s|@CTLD_PORT@|$ctld_port|" \
  -e "s|@SLURMD_PORT@|$slurmd_port|" -e "s|@NODE_LINE@|$node_line|" "$root/tests/slurm/slurm.conf.in" >"$state/slurm.conf"
export SLURM_CONF=$state/slurm.conf
echo "node: $node_line; controller port $ctld_port, slurmd port $slurmd_port; state in $state"

slurmctld -D -i -f "$SLURM_CONF" >"$state/slurmctld.out" 2>&1 &
pid[slurmctld]=$!
slurmd -D -f "$SLURM_CONF" -N "$node" >"$state/slurmd.out" 2>&1 &
pid[slurmd]=$!
up=0
for _ in $(seq 150); do
  if [ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ]; then up=1; break; fi
  sleep 0.2
done
if [ "$up" = 0 ]; then
  echo "FAIL: the node did not come up idle in 30 s"
  tail -n 20 "$state/slurmctld.log" "$state/slurmd.log" 2>/dev/null || tail -n 20 "$state"/*.out
  exit 1
fi
echo "slurm up after ${SECONDS} s: $(sinfo -h -o '%P %a %D %t %N')"

# --- the study: 4 configuration units (fp32 and tests/slurm/configs), small limits -----------------------------
export OMP_NUM_THREADS=1  # the array tasks and the unsharded run alike
opts=(--model "$root/data/minigpt.safetensors" --configs "$root/tests/slurm/configs" --rounds 2 --gens 1 --ppl-tokens 1024
  --max-slots 40 --max-items 140 --calibration 4 --prompt-tokens 8 --gen-tokens 4 --meter model --no-plot)
study=$state/study whole=$state/whole
fail() {
  echo "FAIL: $*"
  for f in "$study"/logs/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 15 "$f"; }; done
  exit 1
}
submit() {  # sets run_array and merge
  local ids
  ids=$(MQ_BIN=$bin bash "$root/scripts/slurm/submit_mixed.sh" --cpus 1 --max-parallel 2 --stage configs 2 "$study" -- "${opts[@]}")
  echo "$ids"
  run_array=$(sed -n 's/^run_array=//p' <<<"$ids")
  merge=$(sed -n 's/^merge=//p' <<<"$ids")
  jobs_submitted+=("$run_array" "$merge")
}
state_of() { scontrol show job "$1" -o 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true; }
last=""
wait_for() {  # job id: prints squeue whenever it changes until the job has ended (at most 240 s from the start)
  local s
  while [ "$SECONDS" -lt 240 ]; do
    local now
    now=$(squeue -h -o '%.10i %.16j %.9T %.24r %N' 2>/dev/null || true)
    if [ "$now" != "$last" ]; then
      echo "[${SECONDS} s]"
      echo "${now:-  (queue empty)}"
      last=$now
    fi
    s=$(state_of "$1")
    case $s in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | DEADLINE) return 0 ;; esac
    sleep 1
  done
  fail "job $1 still ${s:-unknown} after 240 s"
}

# The unsharded reference, meanwhile, outside Slurm.
("$bin" mixed --stage configs --out "$whole" "${opts[@]}" && "$bin" mixed --stage merge --out "$whole" "${opts[@]}") >"$state/whole.log" 2>&1 &
pid[reference]=$!

# First submission: task 1 cannot create its folder (a file stands in its way), so it fails at once; the merge,
# afterok on the array, is cancelled by Slurm; task 0 measures its two units.
mkdir -p "$study"
touch "$study/shard-1"
echo "--- submission 1 (shard 1 made to fail); squeue while it runs (seconds since the test started)"
submit
wait_for "$merge"
[ "$(state_of "${run_array}_0")" = COMPLETED ] || fail "submission 1: array task 0 $(state_of "${run_array}_0")"
[ "$(state_of "${run_array}_1")" = FAILED ] || fail "submission 1: array task 1 $(state_of "${run_array}_1"), FAILED expected"
[ "$(state_of "$merge")" = CANCELLED ] || fail "submission 1: the merge $(state_of "$merge"), CANCELLED expected (afterok, kill-on-invalid-dep)"
[ ! -e "$study/results.json" ] || fail "submission 1 merged although a task failed"
first_task0=$study/logs/mq-mixed_${run_array}_0.out

# Resubmitting the same command retries: task 0 finds its units finished, task 1 measures its two, the merge runs.
rm "$study/shard-1"
echo "--- submission 2, the same command"
submit
wait_for "$merge"
echo "--- finished jobs (jobcomp/filetxt; this Slurm has no accounting database for sacct)"
if [ -f "$state/jobcomp.txt" ]; then
  awk '{ line = ""; for (i = 1; i <= NF; i++) if ($i ~ /^(JobId|Name|JobState|ArrayJobId|ArrayTaskId|StartTime|EndTime|NodeList|ExitCode)=/) line = line " " $i; print line }' \
    "$state/jobcomp.txt"
else
  echo "(no jobcomp.txt)"
fi
[ "$(state_of "$merge")" = COMPLETED ] || fail "submission 2: the merge job ended $(state_of "$merge")"
for t in 0 1; do
  [ "$(state_of "${run_array}_$t")" = COMPLETED ] || fail "submission 2: array task $t $(state_of "${run_array}_$t")"
done
grep -q "configuration units: 2 measured, 0 reused" "$first_task0" || fail "submission 1: task 0 did not measure its 2 units"
grep -q "configuration units: 0 measured, 2 reused" "$study/logs/mq-mixed_${run_array}_0.out" ||
  fail "submission 2: task 0 measured again what it had finished"
grep -q "configuration units: 2 measured, 0 reused" "$study/logs/mq-mixed_${run_array}_1.out" || fail "submission 2: task 1 did not measure its 2 units"
echo "--- the merge job's log"
cat "$study/logs/mq-mixed-merge_${merge}.out"
wait "${pid[reference]}" || { cat "$state/whole.log"; fail "the unsharded run failed"; }
unset 'pid[reference]'

echo "--- merged (2 array tasks) against unsharded"
python3 - "$study" "$whole" "$node" <<'PY'
import glob, json, os, sys
study, whole, host = sys.argv[1:]
load = lambda p: json.load(open(p))
merged, ref = load(study + "/results.json"), load(whole + "/results.json")
def quality(res):  # what must not depend on how the study was split
    q = {}
    for c in res["configs"]:
        r = c["row"]
        q[c["config_id"]] = {"ppl": r["ppl"], "kl": r["divergence"]["kl"], "top1": r["divergence"]["top1_agreement"],
                             "verb_tense": r["verb_tense"]["overall"], "bytes": r["bytes"]}
    return q
qm, qr = quality(merged), quality(ref)
bad = []
print(f"{'config':18} {'PPL merged':>12} {'PPL unsharded':>14} {'KLD merged':>12} {'KLD unsharded':>14} {'top-1 m/u':>15} {'bytes':>9}  same")
for cid in sorted(set(qm) | set(qr)):
    m, r = qm.get(cid), qr.get(cid)
    same = m == r
    if not same: bad.append(cid)
    def f(d, spec, k, sub=None):
        return "-" if d is None else format(d[k][sub] if sub else d[k], spec)
    print(f"{cid:18} {f(m,'12.6f','ppl'):>12} {f(r,'14.6f','ppl'):>14} {f(m,'12.5g','kl','mean'):>12} {f(r,'14.5g','kl','mean'):>14} "
          f"{f(m,'.4f','top1') + '/' + f(r,'.4f','top1'):>15} {f(m,'9','bytes'):>9}  {'yes' if same else 'NO'}")
if len(qm) != 4: bad.append(f"{len(qm)} configurations merged, 4 expected")
if merged["missing"]: bad.append(f"missing: {merged['missing']}")
# Each task measured its own half (units by index: 0, 2 and 1, 3), each unit file names this host.
for k in (0, 1):
    files = sorted(glob.glob(f"{study}/shard-{k}/runs/config/*.json"))
    ids = [os.path.basename(f)[:-5] for f in files]
    print(f"shard-{k}: {ids}")
    if len(ids) != 2: bad.append(f"shard-{k} measured {len(ids)} units, 2 expected")
    for f in files:
        h = load(f)["machine"].get("host")
        if h != host: bad.append(f"{f}: host {h!r}, expected {host!r}")
on = [m["machine"].get("host") for m in merged["measured_on"]]
print(f"measured on: {on}")
if on != [host]: bad.append(f"measured_on {on}")
if bad:
    print("FAIL:", "; ".join(map(str, bad)))
    sys.exit(1)
print("merged quality fields equal the unsharded run's exactly")
PY
echo "PASS in ${SECONDS} s (daemons started, study submitted, merged and compared)"
