#!/usr/bin/env bash
# Fuzz smoke run: builds the libFuzzer targets (preset `fuzz`, clang + ASan + UBSan), writes the
# seed corpora, and runs every loader's fuzzer for FUZZ_SECONDS (default 10) each, one per core at a time. Fails on any
# finding (crash, leak, UB, timeout, an exception other than mq::Error), printing its log.
# Long runs: see fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-10}
# FUZZ_PRESET=sanitize: the test command's sanitizer build, which holds the fuzz targets too.
preset=${FUZZ_PRESET:-fuzz}
bash scripts/configure.sh "${preset}"
cmake --build --preset "${preset}" -j "$(nproc)" --target fuzz_all >/dev/null
build=build/${preset}
rm -rf "${build}/seeds"
"${build}/fuzz/make_fuzz_seeds" "${build}/seeds"
# 12 targets x 10 s = 120 s of fuzzing (the option parser and the mixed unit file joined in issue 53).
# One fuzzer per core at a time (each is single-threaded): 12 targets take 6 x 10 s on two cores.
fuzz_one() {  # fuzz_one TARGET: runs it; prints its line; returns 1 on a finding
  local target=$1 corpus max_len log execs cov
  corpus="${build}/corpus/${target}"   # grows across runs; the seeds are regenerated each time
  mkdir -p "${corpus}"
  max_len=65536                                                  # configs, headers: the 40 KB seeds fit
  case "${target}" in checkpoint|gguf) max_len=262144 ;; esac    # whole small models (the largest seed is ~220 KB)
  log="${build}/fuzz_${target}.log"
  if ! "${build}/fuzz/fuzz_${target}" -max_total_time="${seconds}" -max_len="${max_len}" -timeout=10 \
       -print_final_stats=1 -artifact_prefix="${build}/crash_${target}_" "${corpus}" "${build}/seeds/${target}" >"${log}" 2>&1; then
    echo "fuzz_${target}: FINDING (log: ${log})" >&2
    tail -n 60 "${log}" >&2
    return 1
  fi
  execs=$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "${log}" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "${log}" | tail -n 1 | grep -o '[0-9]*$')
  echo "fuzz_${target}: ${execs} executions in ${seconds} s, coverage ${cov} edges, 0 crashes"
}
lanes=$(nproc)
targets=(safetensors checkpoint model_config train_config npy gguf quant_map energy_coefficients energy_summary ceilings options mixed_unit)
failed=0
for ((i = 0; i < ${#targets[@]}; i += lanes)); do
  pids=()
  for ((k = i; k < i + lanes && k < ${#targets[@]}; ++k)); do
    fuzz_one "${targets[k]}" > "${build}/fuzz_line_${k}.txt" &
    pids+=($!)
  done
  for ((k = 0; k < ${#pids[@]}; ++k)); do
    wait "${pids[k]}" || failed=1
    cat "${build}/fuzz_line_$((i + k)).txt"
  done
  [ "${failed}" -eq 0 ] || exit 1
done
