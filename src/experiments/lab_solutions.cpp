// The reference write-ups of the lab course, rendered from the committed experiments' JSON (and the
// shipped checkpoint for the per-matrix error table): every number below comes from data or from the
// library run on the shipped weights, none is typed here.
#include "experiments/lab_solutions.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/core.h>

#include "experiments/experiment_io.h"
#include "experiments/results.h"
#include "experiments/sweep_report.h"
#include "miniquant/error.h"
#include "miniquant/format.h"
#include "miniquant/gguf/types.h"
#include "miniquant/stats.h"
#include "minigpt/quantized_checkpoint.h"

namespace mqexp {

namespace {

struct Sources {
  SweepResults sweep;
  nlohmann::json manifest;
  std::string provenance;  // one line: where the numbers come from
};

const SchemeRow& row(const SweepResults& r, const std::string& name) {
  const SchemeRow* p = r.find(name);
  if (!p || !p->quality) throw mq::Error(fmt::format("experiments/26-quant-curve/results.json has no measured row for {}", name));
  return *p;
}

std::string mb(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }
std::string gap(double ppl, double base) { return fmt::format("{:+.2f}%", 100.0 * (ppl / base - 1.0)); }

std::string header(const std::string& title, const LabInfo& lab, const Sources& s) { return solution_header(title, lab, s.provenance); }

std::string sol00(const Sources& s, const std::string& root) {
  const SweepResults& r = s.sweep;
  std::ostringstream o;
  o << header("quantizers", lab_list()[0], s);
  o << "## The reference approach\n\n"
       "| TODO block | the library's function | file |\n|---|---|---|\n"
       "| A grid | `mq::symmetric_grid`: s = fp16(absmax / qmax), moved up one fp16 step while it would clip | "
       "`src/miniquant/quantize.cpp` |\n"
       "| B codes | `mq::encode`: round half to even, clamp to [-qmax, qmax], field = code + 2^(bits-1) | "
       "`src/miniquant/quantize.cpp` |\n"
       "| C packing | `mq::pack_fields`: one little-endian bit stream per row (int4: element 2j in the low nibble) | "
       "`src/miniquant/pack.cpp` |\n"
       "| D bytes | `mq::storage_of`: codes (rows padded to bytes) + 2 bytes per scale + packed zero-points | "
       "`src/miniquant/format.cpp` |\n"
       "| E quantizer | `mq::quantize_ref` (scalar); `mq::quantize` is its optimized twin with identical bytes | "
       "`src/miniquant/quantize.cpp`, `quantize_simd.cpp` |\n"
       "| F error | `mq::measure_scheme`: max, RMS error and SQNR accumulated in double | `src/miniquant/stats.cpp` |\n\n";

  // Per-matrix errors of the shipped model's first Linear, by the library.
  const minigpt::Model m = minigpt::load_any_model(root + "/data/minigpt.safetensors");
  const minigpt::LinearInfo li = m.linears().front();
  o << fmt::format("## Measured: one real Linear ({}, {}x{}, of `data/minigpt.safetensors`)\n\n", li.name, li.out, li.in);
  o << "| scheme | bytes (codes + scales) | bits/weight | max abs error | RMS error | SQNR |\n|---|---:|---:|---:|---:|---:|\n";
  for (const char* name : {"int8-per-tensor", "int8-per-channel", "int4-per-channel", "int4-g32", "int4-g64", "int4-g128"}) {
    const mq::QuantStats st = mq::measure_scheme(li.weight, li.out, li.in, mq::Scheme::parse(name), li.name);
    o << fmt::format("| {} | {} + {} | {:.3f} | {:.3e} | {:.3e} | {:.2f} dB |\n", name, st.storage.code_bytes,
                     st.storage.scale_bytes, st.bits_per_weight, st.max_abs_error, st.rms_error, st.sqnr_db);
  }
  const SchemeRow& fp = row(r, "fp32");
  o << fmt::format("\n## Measured: the whole model (`experiments/26-quant-curve`, {} test tokens)\n\n", fp.quality->test_tokens);
  o << "| scheme | PPL | vs fp32 | Linear bytes | bits/weight (Linears) | model bytes |\n|---|---:|---:|---:|---:|---:|\n";
  for (const char* name : {"fp32", "int8-per-tensor", "int8-per-channel", "int4-g64", "int4-g128"}) {
    const SchemeRow& x = row(r, name);
    o << fmt::format("| {} | {:.3f} | {} | {} | {:.3f} | {} |\n", name, x.quality->ppl, gap(x.quality->ppl, fp.quality->ppl),
                     mb(static_cast<double>(x.footprint.bytes_linear)), x.footprint.bits_per_weight,
                     mb(static_cast<double>(x.footprint.bytes)));
  }
  const SchemeRow& g64 = row(r, "int4-g64");
  const double scale_bits = g64.footprint.bits_per_weight - 4.0;
  o << fmt::format(
      "\n## Answers\n\n"
      "- **What do the scales cost?** INT4 g64 stores {:.3f} bits per Linear weight: 4 code bits plus {:.3f} bits of "
      "fp16 scale (16 bits shared by 64 weights). Counting only the code bytes would understate the Linears by "
      "{:.1f}%.\n"
      "- **Why a [-7, 7] grid?** s = absmax / 7 puts the largest weight exactly on a code; with [-8, 7] and "
      "s = absmax / 8 the positive extreme clips (7 s < absmax) and the grid is asymmetric around zero.\n"
      "- **Per-tensor vs per-channel vs per-group:** the table above shows the error falling as a scale covers "
      "fewer weights; in the model, INT4 g64 costs {} in perplexity against FP32 and INT8 per-channel {}.\n",
      g64.footprint.bits_per_weight, scale_bits, 100.0 * scale_bits / g64.footprint.bits_per_weight,
      gap(g64.quality->ppl, fp.quality->ppl), gap(row(r, "int8-per-channel").quality->ppl, fp.quality->ppl));
  return o.str();
}

std::string sol01(const Sources& s) {
  const SweepResults& r = s.sweep;
  const SchemeRow &fp = row(r, "fp32"), &rtn = row(r, "int4-g64"), &gq = row(r, "int4-g64-gptq");
  if (!gq.gptq) throw mq::Error("experiments/26-quant-curve/results.json: the int4-g64-gptq row has no gptq record");
  const GptqRecord& g = *gq.gptq;
  std::ostringstream o;
  o << header("GPTQ", lab_list()[1], s);
  o << "## The reference approach\n\n"
       "| TODO block | the library's function | file |\n|---|---|---|\n"
       "| A Hessian | `mq::Hessian` (add: rank-n update in double; matrix: X X^T / n); the activations come from "
       "`minigpt::collect_hessians`, a hook on every Linear's input while the model runs calibration windows | "
       "`src/miniquant/hessian.cpp`, `src/minigpt/calibrate.cpp` |\n"
       "| B output error | `mq::output_error`: tr((W - Q) H (W - Q)^T) | `src/miniquant/gptq.cpp` |\n"
       "| C solver | `mq::gptq_quantize`: dead columns, damping (retried x10 when Cholesky fails), upper Cholesky factor of "
       "H^-1, column loop inside a block, lazy update of the later columns after each block | `src/miniquant/gptq.cpp` |\n\n"
       "The whole model is quantized by `minigpt::quantize_model` (`src/minigpt/quantize_model.cpp`), sequentially: each "
       "layer is calibrated on the outputs of the already quantized ones.\n\n";
  o << fmt::format(
      "## Measured (`experiments/26-quant-curve`)\n\n"
      "Settings: {} calibration windows of the validation split, damping {:g} of the mean diagonal, blocks of {}, "
      "act-order {}, {}.\n\n"
      "| model | PPL | vs fp32 | quantize s |\n|---|---:|---:|---:|\n"
      "| fp32 | {:.3f} | | |\n| int4-g64 (round to nearest) | {:.3f} | {} | {:.2f} |\n| int4-g64 + GPTQ | {:.3f} | {} | {:.2f} |\n\n",
      g.calibration_windows, g.percdamp, g.block, g.act_order ? "on" : "off", g.sequential ? "sequential" : "one pass",
      fp.quality->ppl, rtn.quality->ppl, gap(rtn.quality->ppl, fp.quality->ppl), rtn.quantize_seconds, gq.quality->ppl,
      gap(gq.quality->ppl, fp.quality->ppl), gq.quantize_seconds);
  const double rtn_gap = rtn.quality->ppl - fp.quality->ppl, gq_gap = gq.quality->ppl - fp.quality->ppl;
  o << fmt::format(
      "## Answers\n\n"
      "- **Does GPTQ pay off here?** It closes {:.1f}% of round-to-nearest's perplexity gap (RTN {}, GPTQ {}), at the same "
      "{:.3f} bits per weight: the codes and scales are stored exactly as RTN's, only chosen differently.\n"
      "- **What does it cost?** {:.2f} s of quantization (calibration included) against {:.3f} s for RTN, once, offline.\n"
      "- **Why real activations?** GPTQ minimises ||W X - Q X||; H = X X^T / n of random inputs has none of the "
      "correlations between a real layer's inputs that let later columns absorb a column's rounding error. The lab "
      "01 check collects H from real calibration windows, as `miniquant quantize` does.\n",
      rtn_gap > 0 ? 100.0 * (1.0 - gq_gap / rtn_gap) : 0.0, gap(rtn.quality->ppl, fp.quality->ppl),
      gap(gq.quality->ppl, fp.quality->ppl), gq.footprint.bits_per_weight, gq.quantize_seconds, rtn.quantize_seconds);
  return o.str();
}

// The sweep README's answers, split into the four questions (a paragraph opening with ** starts one).
std::vector<std::string> sweep_answers(const Sources& s) {
  const std::string block = sweep_readme_block(s.sweep, s.manifest);
  const size_t at = block.find("### Answers");
  if (at == std::string::npos) throw mq::Error("the sweep's README block has no '### Answers' section");
  std::istringstream in(block.substr(at));
  std::string line;
  std::vector<std::string> answers;
  std::getline(in, line);  // the heading
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) break;
    if (line.rfind("**", 0) == 0) answers.emplace_back();
    if (!answers.empty()) answers.back() += line + "\n";
  }
  if (answers.size() != 4)
    throw mq::Error(fmt::format("the sweep's README answers have {} parts, lab 02 asks 4 questions", answers.size()));
  for (auto& a : answers)
    while (!a.empty() && a.back() == '\n') a.pop_back();
  return answers;
}

std::string sol02(const Sources& s) {
  const SweepResults& r = s.sweep;
  const SchemeRow& fp = row(r, "fp32");
  std::ostringstream o;
  o << header("the quantization Pareto curve", lab_list()[2], s);
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A frontier | `mqexp::pareto_frontier` | `src/experiments/pareto.cpp` |\n"
       "| B decode traffic | `minigpt::decode_traffic` | `src/minigpt/throughput.cpp` |\n"
       "| C the sweep | `miniquant sweep` -> `mqexp::run_sweep` (evaluate, time, compare); plots `experiments/plot/*.py` | "
       "`src/experiments/sweep.cpp` |\n"
       "| D answers | the sweep README's generated answers | `src/experiments/sweep_report.cpp` |\n\n"
       "The reference run is `experiments/26-quant-curve` (figures there: `pareto.png`, `verb_tense_accuracy.png`, "
       "`generalization_accuracy.png`, `roofline_overlay.png`).\n\n";
  o << "## Measured\n\n| scheme | PPL | vs fp32 | model bytes | bits/weight | decode FLOP/byte | on the frontier |\n"
       "|---|---:|---:|---:|---:|---:|:---:|\n";
  std::vector<const SchemeRow*> frontier;
  for (const SchemeRow& x : r.schemes) {
    if (!x.ok || !x.quality) continue;
    o << fmt::format("| {} | {:.3f} | {} | {} | {:.3f} | {:.3f} | {} |\n", x.scheme, x.quality->ppl,
                     gap(x.quality->ppl, fp.quality->ppl), mb(static_cast<double>(x.footprint.bytes)),
                     x.footprint.bits_per_weight, x.footprint.decode.intensity, x.on_pareto_frontier ? "yes" : "");
    if (x.on_pareto_frontier) frontier.push_back(&x);
  }
  std::sort(frontier.begin(), frontier.end(), [](const SchemeRow* a, const SchemeRow* b) { return a->footprint.bytes < b->footprint.bytes; });
  o << "\n**The shape of the frontier**, from the smallest model up: ";
  for (size_t i = 0; i < frontier.size(); ++i)
    o << fmt::format("{}{} ({}, PPL {:.3f})", i ? " -> " : "", frontier[i]->scheme, mb(static_cast<double>(frontier[i]->footprint.bytes)),
                     frontier[i]->quality->ppl);
  o << ". Along it each step buys perplexity with bytes; everything else is beaten on both by one of these.\n\n";
  const std::vector<std::string> a = sweep_answers(s);
  const char* questions[4] = {
      "Which schemes are on the Pareto frontier (bytes vs perplexity), and why are the others not?",
      "How close does INT4 g64 + GPTQ get to FP32 perplexity, and how much of round-to-nearest's gap does GPTQ close?",
      "What speed-up does the roofline predict for INT4 over FP32 decode, and what did you measure?",
      "Which scheme would you ship on a Raspberry Pi, and why?"};
  // Question 1 also asks why the others are not on it: name what beats each, from the data.
  std::string beaten;
  for (const SchemeRow& x : r.schemes) {
    if (!x.ok || !x.quality || x.on_pareto_frontier) continue;
    for (const SchemeRow* f : frontier)
      if (f->footprint.bytes <= x.footprint.bytes && f->quality->ppl <= x.quality->ppl) {
        beaten += fmt::format("{}{} ({}, PPL {:.4f}) by {} ({}, PPL {:.4f})", beaten.empty() ? "" : "; ", x.scheme,
                              mb(static_cast<double>(x.footprint.bytes)), x.quality->ppl, f->scheme,
                              mb(static_cast<double>(f->footprint.bytes)), f->quality->ppl);
        break;
      }
  }
  o << "The four questions of the handout, answered by the sweep's own generated README block (and, for the first, "
       "the rows that beat each scheme off the frontier):\n\n";
  for (int i = 0; i < 4; ++i) {
    o << fmt::format("## {}. {}\n\n{}\n\n", i + 1, questions[i], a[static_cast<size_t>(i)]);
    if (i == 0 && !beaten.empty()) o << "Beaten on both bytes and perplexity: " << beaten << ".\n\n";
  }
  std::string text = o.str();
  text.pop_back();
  return text;
}

std::string sol03(const Sources& s, const std::string& root) {
  const SweepResults& r = s.sweep;
  const minigpt::Model m = minigpt::load_any_model(root + "/data/minigpt.safetensors");
  std::ostringstream o;
  o << header("GGUF export", lab_list()[3], s);
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A Q8_0 | `mq::gguf::from_qtensor`: qs = code (field - 128), d = the group's fp16 scale, repeated in each 32-block "
       "of a group | `src/miniquant/gguf/convert.cpp` |\n"
       "| B Q4_0 | the same function: nibble = field (code + 8), byte j = element j (low) and j + 16 (high) | "
       "`src/miniquant/gguf/convert.cpp` |\n"
       "| C dequantize | `mq::gguf::dequantize`, ggml's `dequantize_row_*` element by element | "
       "`src/miniquant/gguf/convert.cpp` |\n\n"
       "The whole model is written by `minigpt::to_gguf` (`src/minigpt/gguf_export.cpp`, `miniquant export-gguf`); "
       "the block structs and their size asserts are in `src/miniquant/gguf/types.h`; the writer and the bounds-checked "
       "reader in `src/miniquant/gguf/io.cpp`. How closely the real llama.cpp reproduces MiniGPT's logits is measured by "
       "`tests/test_gguf_llama_slow.cpp` (table in the top-level README, section GGUF export).\n\n";
  o << "## Measured: the 16 Linears of `data/minigpt.safetensors`\n\n"
       "| scheme | GGUF type | miniquant bytes | bits/weight | GGUF bytes | bits/weight | PPL (exact conversion: the sweep's row) |\n"
       "|---|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [name, type] : std::vector<std::pair<const char*, mq::gguf::TensorType>>{
           {"int8-per-channel", mq::gguf::TensorType::Q8_0}, {"int4-g64", mq::gguf::TensorType::Q4_0},
           {"int4-g128", mq::gguf::TensorType::Q4_0}}) {
    const mq::Scheme sc = mq::Scheme::parse(name);
    int64_t ours = 0, gguf = 0, weights = 0;
    for (const minigpt::LinearInfo& li : m.linears()) {
      ours += mq::storage_of(sc, li.out, li.in).total();
      gguf += mq::gguf::tensor_bytes(type, li.in, li.out);
      weights += static_cast<int64_t>(li.in) * li.out;
    }
    const double w = static_cast<double>(weights);
    o << fmt::format("| {} | {} | {} | {:.3f} | {} | {:.3f} | {:.3f} |\n", name, mq::gguf::tensor_type_name(type), ours,
                     8.0 * static_cast<double>(ours) / w, gguf, 8.0 * static_cast<double>(gguf) / w, row(r, name).quality->ppl);
  }
  o << "\n## Answers\n\n"
       "- **Why is the GGUF file larger than miniquant's storage for g64 and g128?** ggml's blocks hold 32 weights and one "
       "fp16 scale each, so a group of 64 or 128 weights repeats its scale in every block (the table's bits per weight).\n"
       "- **Why is the conversion exact?** Q8_0 and Q4_0 are symmetric grids with an fp16 scale, as miniquant's: the code "
       "and the scale are copied, only the nibble order changes (ggml splits a block into halves, miniquant interleaves).\n"
       "- **What would not be exact?** Asymmetric int4 becomes Q4_1, whose minimum m = fp16(-s z) rounds (bounded by "
       "`mq::gguf::q4_1_error_bound`); int2 / int3 and per-tensor grids have no ggml type and are refused.\n";
  return o.str();
}

std::string sol06() {
  std::ostringstream o;
  o << solution_header("the kernel", lab_list()[6],
                       "This lab reads no experiment: its speed bars are measured on your machine in each grading run (the "
                       "handout gives one VM's figures and how the bars were chosen).");
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A scalar GEMV | `mq::gemv_ref`: per row and group, sum (field - z) x in fp32, times the group's scale | "
       "`src/miniquant/kernels/ref.cpp` |\n"
       "| B +a8 | `mq::quantize_activations` (s = absmax / 127, round half to even) and `mq::gemm_dynamic_ref` (exact "
       "integer group sums, double scaling) | `src/miniquant/kernels/ref_dynamic.cpp` |\n"
       "| C unrolled | `mq::gemm` on 1 thread: `rows_tile` keeps R rows and two partial sums per block in flight | "
       "`src/miniquant/kernels/word_kernel.h`, `word_tiles.h` |\n"
       "| D threads | `mq::gemm` on T threads: rows split into contiguous slices, one OpenMP region per call | "
       "`src/miniquant/kernels/weight_only.cpp` |\n"
       "| E SIMD | the same kernels: fields decoded in registers by a word table (`word_decoders.h`), bf16 dot products "
       "(`vdpbf16ps`) on AVX-512 BF16, xsimd fused multiply-adds elsewhere | `src/miniquant/kernels/word_decoders.h` |\n"
       "| F several tokens | `mq::gemm` with n > 1: `pair_tile`, two rows by T tokens, each field decoded once for all T "
       "tokens; MiniGPT's Linears also keep a blocked copy for prefill (`runs_blocked` in the kernel registry) | "
       "`src/miniquant/kernels/word_tiles.h`, `blocked.h` |\n\n"
       "`miniquant lab check 06 --reference` grades these functions through the same checks, so its speed bars compare "
       "the library with itself (ratios near 1) and with the read bandwidth. A learner-style solution written from the "
       "handout alone is `tests/labs/lab06_solution.cpp`; the test suite grades it (`ctest -R lab06_solution`).\n\n"
       "## Answers\n\n"
       "The handout's questions ask for your own run's numbers; these are the reasoning each answer needs, with the "
       "handout's figures from one VM. Block G reads your `labs/06-kernel/answers.md` against the table a grading run of "
       "blocks E and F kept on your machine (`labs/06-kernel/run/tables.json`). `--reference` has no earlier run to "
       "cite: it writes its three answers from its own table (`lab06_answers.cpp`, `reference_answers`) and reads them "
       "through the same checks.\n\n"
       "- **What fraction of the read bandwidth does your block E GEMV reach, and is the decode or the memory the "
       "limit?** A GEMV of int4-g64 moves 0.53 bytes per weight for one multiply-add (about 3.8 flops per byte): at the "
       "read bandwidth its time is bytes / bandwidth, and the library reaches 41-66% of it there. A kernel that "
       "decodes into a float tile spends several instructions per field (load, mask or shift, subtract, convert, "
       "scale, store, reload) before its one fused multiply-add, so it runs at 10-24%: the decode, not the memory, "
       "sets its time. Counting your decode loop's instructions per field and multiplying by the weights gives the "
       "time it cannot beat.\n"
       "- **How many 1-token times do 8 tokens take, what would 8 GEMVs take, and why is the library's ratio not 1?** "
       "A loop of 8 GEMVs decodes and reads every weight 8 times: about 8x (8.2x measured). Decoding each weight once "
       "for all 8 tokens leaves the 8 multiply-adds per weight, which a memory-bound GEMV had hidden behind the "
       "reads: 4.3-5.3x for the library and the handout's solution. The ratio would be 1 only if the arithmetic of 8 "
       "tokens still fit in the time of one weight read, which needs many more flops per byte than a 2-core CPU has.\n"
       "- **From how many tokens is this GEMM limited by arithmetic rather than DRAM?** At n tokens the intensity is "
       "about 3.8 n flops per byte (2 n flops per 0.53 bytes). The crossover is where it equals the machine's fp32 "
       "FMA ceiling over its read bandwidth (`miniquant roofline`'s two numbers): n = ceiling / (3.8 x bandwidth). "
       "A kernel whose decode costs more than its multiply-adds reaches its own limit earlier, from the first token.\n";
  return o.str();
}

std::string sol07() {
  std::ostringstream o;
  o << solution_header("AWQ", lab_list()[7],
                       "Its numbers are measured on the shipped model in each grading run (the handout gives the library's on one "
                       "VM); the sweep's own comparison of AWQ with RTN and GPTQ is in `experiments/26-quant-curve`.");
  o << "## The reference approach\n\n"
       "| TODO block | the library | file |\n|---|---|---|\n"
       "| A channel_mean_abs | `minigpt::collect_channel_stats`: mean and max |x| per input channel and H = X^T X / n in one "
       "pass of the model's Linear hook | `src/minigpt/channel_stats.cpp` |\n"
       "| B keep 1% in fp16 | none: the library never stores mixed-precision columns (no kernel runs them); the reference "
       "writes the handout's definition in `src/labs/reference/lab07_ref.cpp` | - |\n"
       "| C awq_search | `minigpt::awq_scales`, the `awq` row of the transform table | `src/minigpt/awq.cpp`, "
       "`transform_table.h` |\n"
       "| D fold_input_scale | `minigpt::fold_input_scale` | `src/minigpt/scale_fold.cpp` |\n"
       "| E the whole model | `quantize_model` with a `-awq` recipe: statistics from one fp32 pass, attn_out then qkv then "
       "mlp_up in each layer, then the recipe's quantizer. The recipe scores qkv and mlp_up by the output of the block "
       "they feed and adds AWQ's clip search, so block E compares yours with `minigpt::awq_scales` scored by each "
       "Linear's own output, folded the same way, and prints the recipe beside it | `src/minigpt/quantize_model.cpp`, "
       "`transform_block.h` |\n\n"
       "## Answers\n\n"
       "The grader reads these three answers (block F): their claims, the names they give and the numbers they cite, which "
       "block B's measurement must print as cited.\n\n"
       "## 1. Why does keeping 1% of the channels chosen by activation beat 1% chosen by weight magnitude by so much?\n\n"
       "A column's error reaches the output multiplied by its input: tr(dW H dW^T) weights column j by H_jj, the mean "
       "x_j^2. A column whose inputs are large carries its rounding error into the output many times over, whatever its "
       "weights' size. On `h.1.attn.c_attn` at int3-g128, three channels in 256 hold most of the damage: kept by "
       "activation they leave 0.37 of RTN's error, by weight magnitude 0.84, at random 1.00.\n\n"
       "## 2. alpha = 0 is always a candidate, so each Linear's calibration error never rises. How can the model's KLD rise "
       "at int4-g128 all the same? Name two things the per-Linear error does not see.\n\n"
       "The search scores each Linear alone, on calibration rows, with the fp32 model's inputs. It does not see how the "
       "errors of consecutive Linears combine through attention, GELU and the residual stream, nor test tokens unlike the "
       "calibration windows; and a scaled column also coarsens the grid of the other columns of its group. At int4-g128 "
       "RTN is already close (KLD 7e-4) and those effects dominate; at int2-g64 the per-Linear gains are large enough to "
       "carry through. On this model most of the rise sits on the tokens after a story separator: mlp_up's scale, chosen "
       "by its own output error before GELU, leaves about 9 times RTN's KL there. Scored by the block's output (GELU, "
       "then mlp_down), as llm-awq scores it, the same search no longer rises.\n\n"
       "## 3. Why can mlp_down not take a scale, and what would you have to change in the model to give it one?\n\n"
       "Its input is GELU's output, and GELU is not linear: dividing h by s does not divide GELU(h) by s, so no weight "
       "before it can absorb the scale. To give it one, the forward pass would need an extra elementwise multiply of "
       "GELU's output by 1/s (a scale kept with the activations), which the fp32 model does not have.\n";
  return o.str();
}

}  // namespace

std::string solution_header(const std::string& title, const LabInfo& lab, const std::string& provenance) {
  return fmt::format(
      "# Lab {} reference: {}\n\n"
      "<!-- generated by `miniquant lab solutions` (src/experiments/lab_solutions.cpp); do not edit: "
      "tests/labs/test_labs.cpp checks this file against the committed JSON -->\n\n"
      "The handout is [`labs/{}/README.md`](../labs/{}/README.md). The reference implementation is the library "
      "itself; `miniquant lab check {} --reference` grades it with the same checks as your file. {}\n\n",
      lab.number, title, lab.dir, lab.dir, lab.number, provenance);
}

std::vector<std::pair<std::string, std::string>> lab_solutions(const std::string& root) {
  Sources s;
  const std::string dir = root + "/experiments/26-quant-curve";
  s.sweep = sweep_results_from_json(read_json(dir + "/results.json"), dir + "/results.json");
  s.manifest = read_json(dir + "/manifest.json");
  const std::string date = s.manifest.value("date", std::string("an unrecorded date"));
  std::string commit = "an unrecorded commit";
  if (s.manifest.contains("build") && s.manifest["build"].contains("binary_configured_at_commit"))
    commit = s.manifest["build"]["binary_configured_at_commit"].get<std::string>();
  s.provenance = fmt::format("Numbers: `experiments/26-quant-curve/results.json` (the sweep of {}, commit {}) and the "
                             "library run on `data/minigpt.safetensors`.", date, commit);
  const auto& labs = lab_list();
  auto file = [&](size_t i) { return labs[i].solution.substr(std::string("solutions/").size()); };
  return {{file(0), sol00(s, root)}, {file(1), sol01(s)},          {file(2), sol02(s)},
          {file(3), sol03(s, root)}, {file(4), solution_04(root)}, {file(5), solution_05(root)}, {file(6), sol06()}, {file(7), sol07()}};
}

}  // namespace mqexp
