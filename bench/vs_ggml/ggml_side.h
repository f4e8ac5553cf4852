// ggml's side of the comparison: the CPU backend as llama.cpp sets it up (the variant ggml's scoring picked, a
// persistent threadpool per thread count as llama-cli / llama-bench attach one, weights in the first extra buffer
// type whose supports_op accepts the mul_mat: CPU_REPACK for q4_0 on AVX2 / AVX-512), and one ggml_mul_mat graph
// per weight copy and batch size, computed with ggml_backend_graph_compute. Activations go in as fp32; the op
// quantizes them itself (pairs.h ActQuant).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ggml_api.h"

namespace vsggml {

class GgmlBackend {
 public:
  explicit GgmlBackend(const Api& api);
  ~GgmlBackend();
  GgmlBackend(const GgmlBackend&) = delete;
  GgmlBackend& operator=(const GgmlBackend&) = delete;

  // Attaches the pool of `threads` workers (made on first use, kept) and sets the backend's thread count.
  void use_threads(int threads);
  // Stops the attached pool's workers polling (they sleep until the next compute resumes them).
  void pause();
  // Where llama.cpp would put a weight of this type and shape (llama-model-loader's weight_buft_supported): the
  // first of the device's extra buffer types whose supports_op accepts mul_mat(W, fp32 x) with W in it, else
  // the device's own buffer type.
  ggml_backend_buffer_type_t weight_buft(ggml_type type, int64_t out, int64_t in) const;

  const Api& api;
  ggml_backend_dev_t dev = nullptr;
  ggml_backend_t backend = nullptr;

 private:
  std::map<int, ggml_threadpool_t> pools_;
  ggml_threadpool_t current_ = nullptr;
};

// `copies` identical copies of one weight quantized by ggml (ggml_quantize_chunk, as llama-quantize does),
// placed in weight_buft; for each batch size an fp32 input x and per copy the graph y = mul_mat(W, x).
class GgmlMatmul {
 public:
  // w: (out, in) row-major fp32.
  GgmlMatmul(const GgmlBackend& be, ggml_type type, const float* w, int64_t out, int64_t in, int64_t copies,
             const std::vector<int64_t>& batches);
  ~GgmlMatmul();
  GgmlMatmul(const GgmlMatmul&) = delete;
  GgmlMatmul& operator=(const GgmlMatmul&) = delete;

  void set_x(int64_t n, const float* x);  // x: (n, in)
  void run(int64_t copy, int64_t n);      // one ggml_backend_graph_compute of that copy's mul_mat
  void get_y(int64_t copy, int64_t n, float* y) const;  // y: (n, out)
  // The weights as ggml's to_float reads them back from the quantized rows (before any repacking): (out, in).
  std::vector<float> dequantized() const;

  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  size_t weight_bytes() const;   // ggml_nbytes of one copy: what one call reads of the weights
  std::string buft_name() const;  // "CPU_REPACK", "CPU"

 private:
  struct Batch {
    ggml_tensor* x = nullptr;
    std::vector<ggml_tensor*> y;       // per copy
    std::vector<ggml_cgraph*> graph;   // per copy
  };
  const GgmlBackend& be_;
  ggml_type type_;
  int64_t out_, in_;
  ggml_backend_buffer_type_t buft_ = nullptr;
  std::vector<uint8_t> host_;  // the quantized rows, (out, row bytes)
  ggml_context* wctx_ = nullptr;
  ggml_context* ioctx_ = nullptr;
  ggml_backend_buffer_t wbuf_ = nullptr, iobuf_ = nullptr;
  std::vector<ggml_tensor*> w_;  // per copy, ne = (in, out)
  std::map<int64_t, Batch> batches_;
};

}  // namespace vsggml
