#!/usr/bin/env bash
# Fuzz smoke run: builds the libFuzzer targets (preset `fuzz`, clang + ASan + UBSan), writes the
# seed corpora, and runs every loader's fuzzer for FUZZ_SECONDS (default 10) each. Fails on any
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
# 10 targets x 10 s = 100 s of fuzzing: no more than the 7 x 15 s = 105 s before the experiment-file
# targets (energy coefficients, energy summary, ceilings) joined.
for target in safetensors checkpoint model_config train_config npy gguf quant_map energy_coefficients energy_summary ceilings; do
  corpus="${build}/corpus/${target}"   # grows across runs; the seeds are regenerated each time
  mkdir -p "${corpus}"
  max_len=65536                                                  # configs, headers: the 40 KB seeds fit
  case "${target}" in checkpoint|gguf) max_len=262144 ;; esac    # whole small models (the largest seed is ~220 KB)
  log="${build}/fuzz_${target}.log"
  if ! "${build}/fuzz/fuzz_${target}" -max_total_time="${seconds}" -max_len="${max_len}" -timeout=10 \
       -print_final_stats=1 -artifact_prefix="${build}/crash_${target}_" "${corpus}" "${build}/seeds/${target}" >"${log}" 2>&1; then
    echo "fuzz_${target}: FINDING (log: ${log})" >&2
    tail -n 60 "${log}" >&2
    exit 1
  fi
  execs=$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "${log}" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "${log}" | tail -n 1 | grep -o '[0-9]*$')
  echo "fuzz_${target}: ${execs} executions in ${seconds} s, coverage ${cov} edges, 0 crashes"
done
