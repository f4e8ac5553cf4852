#!/usr/bin/env bash
# The merge of a sharded `miniquant mixed`, whatever engine ran the shards:
#   mixed_merge.sh OUT AUTO [miniquant mixed options...]
# reads every OUT/shard-*/runs and writes the study (results.json, manifest.json, README.md, figures) into
# OUT. With AUTO=1 the shards also ran the auto stage: each allocated the same maps from the same unit files
# into its own configs_auto/ and allocation.json; those must agree (checked) and are copied to OUT, where the
# merge looks for them. The merge refuses a partial set and names the missing units (exit 1) unless
# --allow-partial is among the options; --per-machine adds one report per machine (OUT/by-machine/).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: mixed_merge.sh OUT AUTO(0|1) [miniquant mixed options...]" >&2
  exit 2
fi
out=$1 auto=$2
shift 2
mq_prog=mixed_merge
# shellcheck source=scripts/slurm/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mq_folder OUT "$out"
mq_flag01 AUTO "$auto"
mq_binary
runs=()
for d in "$out"/shard-*/runs; do
  [ -d "$d" ] && runs+=(--runs "$d")
done
if [ ${#runs[@]} -eq 0 ]; then
  echo "mixed_merge: no $out/shard-*/runs folder: no shard has run" >&2
  exit 1
fi
if [ "$auto" = 1 ]; then
  first=""
  for s in "$out"/shard-*; do
    [ -d "$s/configs_auto" ] || { echo "mixed_merge: $s has no configs_auto/ (its auto stage did not run)" >&2; exit 1; }
    if [ -z "$first" ]; then
      first=$s
    elif ! diff -rq "$first/configs_auto" "$s/configs_auto" >/dev/null || ! cmp -s "$first/allocation.json" "$s/allocation.json"; then
      echo "mixed_merge: $first and $s allocated different maps (their unit files differed when the auto stage ran)" >&2
      exit 1
    fi
  done
  rm -rf "$out/configs_auto.tmp"
  cp -r "$first/configs_auto" "$out/configs_auto.tmp"
  rm -rf "$out/configs_auto"
  mv "$out/configs_auto.tmp" "$out/configs_auto"
  cp "$first/allocation.json" "$out/allocation.json.tmp"
  mv "$out/allocation.json.tmp" "$out/allocation.json"
fi
echo "mixed_merge: $((${#runs[@]} / 2)) shard folders -> $out"
exec "$MQ_BIN" mixed --stage merge --out "$out" "${runs[@]}" "$@"
