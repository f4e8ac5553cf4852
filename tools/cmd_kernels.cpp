// `miniquant kernels`: the kernel map, printed from the registry (kernels/registry.h): for every (family, activation
// mode, build) the kernel that runs it, its layout, its scalar twin and the test comparing them; with --here, which
// row each family and mode selects on this build and CPU. docs/ARCHITECTURE.md carries the map (test_kernel_registry).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "commands.h"
#include "miniquant/format_table.h"
#include "miniquant/kernels/kernels.h"
#include "miniquant/kernels/registry.h"

namespace mqcli {
namespace {

// One line per family and mode: the row gemm() selects here (use_isa) and, where one applies, the block row
// QuantizedLinear keeps. Shown on a 64 x 256 tensor of the family's table scheme with finite activations.
void print_here() {
  const char* modes[] = {"weight-only", "+bf16", "+a8", "+a16"};
  const mq::ActMode acts[] = {mq::ActMode::weight_only, mq::ActMode::bf16, mq::ActMode::dynamic_int8, mq::ActMode::dynamic_int16};
  std::vector<float> w(64 * 256, 0.5f), x(256, 1.0f);
  const std::string a8 = mq::dynamic_kernel_name("int4"), a8_int3 = mq::dynamic_kernel_name("int3");
  fmt::print("this build: xsimd {}, +a8 {}{}, K +a8 {}\n", mq::simd_arch_name(), a8,
             a8_int3 == a8 ? std::string() : fmt::format(" (int3: {}, no VBMI)", a8_int3), mq::kquant_dynamic_kernel_name());
  for (const mq::FormatTraits& f : mq::format_table()) {
    mq::Scheme s{};
    for (const mq::Scheme& t : mq::scheme_table())
      if (&mq::traits_of(t) == &f) {
        s = t;
        break;
      }
    const mq::QTensor q = mq::quantize(w.data(), 64, 256, s);
    for (int i = 0; i < 4; ++i) {
      if (!mq::has_kernel(s, acts[i])) continue;
      const mq::KernelRow& r = mq::select_kernel(q, acts[i], true, x.data(), 1);
      const mq::KernelRow* b = mq::blocked_kernel(q, acts[i]);
      const auto name = [](std::string_view k) { return k.substr(0, k.find(':')); };
      fmt::print("{:<18} {:<12} gemm(): {}{}\n", s.name(), modes[i], name(r.kernel),
                 b ? fmt::format("; QuantizedLinear: {}", name(b->kernel)) : "");
    }
  }
}

}  // namespace

void register_kernels(CLI::App& app) {
  auto here = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("kernels", "The kernel map from the registry: family x activations x build -> kernel, twin, test");
  cmd->add_flag("--here", *here, "instead, the kernel each family and mode selects on this build and CPU");
  cmd->callback([here] {
    if (*here) return print_here();
    std::fputs(mq::kernel_map_markdown().c_str(), stdout);
  });
}

}  // namespace mqcli
