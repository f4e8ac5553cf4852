// Every subcommand, in help order: the binary's main() and the tests that walk the whole command line share it.
#include "commands.h"

namespace mqcli {

void register_all(CLI::App& app) {
  register_quant_report(app);
  register_corpus(app);
  register_train(app);
  register_eval(app);
  register_generate(app);
  register_quantize(app);
  register_export_gguf(app);
  register_roofline(app);
  register_sweep(app);
  register_calibration_draws(app);
  register_energy(app);
  register_mixed(app);
  register_kquants(app);
  register_vs_llama(app);
  register_lab(app);
  register_kernels(app);
}

}  // namespace mqcli
