#include "ggml_side.h"

#include "miniquant/error.h"

namespace vsggml {

GgmlBackend::GgmlBackend(const Api& a) : api(a) {
  if (a.ggml_backend_reg_dev_count(a.reg) < 1) throw mq::Error("vs_ggml: the CPU backend lists no device");
  dev = a.ggml_backend_reg_dev_get(a.reg, 0);
  backend = a.ggml_backend_dev_init(dev, nullptr);
  if (!backend) throw mq::Error("vs_ggml: ggml_backend_dev_init failed for the CPU device");
}

GgmlBackend::~GgmlBackend() {
  api.ggml_backend_cpu_set_threadpool(backend, nullptr);
  for (auto& [n, pool] : pools_) api.ggml_threadpool_free(pool);
  api.ggml_backend_free(backend);
}

void GgmlBackend::use_threads(int threads) {
  ggml_threadpool_t& pool = pools_[threads];
  if (!pool) {
    ggml_threadpool_params p;
    api.ggml_threadpool_params_init(&p, threads);  // llama.cpp's defaults: poll 50, no affinity, normal priority
    pool = api.ggml_threadpool_new(&p);
    if (!pool) throw mq::Error("vs_ggml: ggml_threadpool_new failed for " + std::to_string(threads) + " threads");
  }
  api.ggml_backend_cpu_set_threadpool(backend, pool);  // pauses the previously attached pool
  api.ggml_backend_set_n_threads(backend, threads);
  current_ = pool;
}

void GgmlBackend::pause() {
  if (current_) api.ggml_threadpool_pause(current_);
}

ggml_backend_buffer_type_t GgmlBackend::weight_buft(ggml_type type, int64_t out, int64_t in) const {
  // Shape-only tensors: the op exists for supports_op to inspect, nothing is allocated.
  ggml_init_params ip{.mem_size = 4 * api.ggml_tensor_overhead(), .mem_buffer = nullptr, .no_alloc = true};
  ggml_context* ctx = api.ggml_init(ip);
  ggml_tensor* w = api.ggml_new_tensor_2d(ctx, type, in, out);
  ggml_tensor* x = api.ggml_new_tensor_2d(ctx, GGML_TYPE_F32, in, 512);  // llama.cpp asks with a 512-token batch
  ggml_tensor* op = api.ggml_mul_mat(ctx, w, x);
  ggml_backend_buffer_type_t chosen = nullptr;
  for (ggml_backend_buffer_type_t* b = api.ggml_backend_dev_get_extra_bufts(dev); b && *b && !chosen; ++b) {
    ggml_backend_buffer_t probe = api.ggml_backend_buft_alloc_buffer(*b, 0);  // an empty buffer names its type
    w->buffer = probe;
    if (api.ggml_backend_dev_supports_op(dev, op)) chosen = *b;
    w->buffer = nullptr;
    api.ggml_backend_buffer_free(probe);
  }
  api.ggml_free(ctx);
  return chosen ? chosen : api.ggml_backend_dev_buffer_type(dev);
}

GgmlMatmul::GgmlMatmul(const GgmlBackend& be, ggml_type type, const float* w, int64_t out, int64_t in, int64_t copies,
                       const std::vector<int64_t>& batches)
    : be_(be), type_(type), out_(out), in_(in) {
  const Api& a = be.api;
  const int64_t blk = a.ggml_blck_size(type);
  if (in % blk != 0)
    throw mq::UsageError("vs_ggml: in = " + std::to_string(in) + " is not a multiple of " + a.ggml_type_name(type) +
                         "'s block of " + std::to_string(blk));
  const size_t row_bytes = a.ggml_type_size(type) * static_cast<size_t>(in / blk);
  host_.resize(row_bytes * static_cast<size_t>(out));
  if (a.ggml_quantize_chunk(type, w, host_.data(), 0, out, in, nullptr) != host_.size())
    throw mq::Error("vs_ggml: ggml_quantize_chunk wrote an unexpected number of bytes");

  buft_ = be.weight_buft(type, out, in);
  wctx_ = a.ggml_init({.mem_size = static_cast<size_t>(copies) * a.ggml_tensor_overhead(), .mem_buffer = nullptr, .no_alloc = true});
  for (int64_t c = 0; c < copies; ++c) w_.push_back(a.ggml_new_tensor_2d(wctx_, type, in, out));
  wbuf_ = a.ggml_backend_alloc_ctx_tensors_from_buft(wctx_, buft_);
  if (!wbuf_) throw mq::Error("vs_ggml: cannot allocate " + std::to_string(copies) + " weight copies in " + buft_name());
  for (ggml_tensor* t : w_) a.ggml_backend_tensor_set(t, host_.data(), 0, host_.size());  // repacks in CPU_REPACK

  const size_t nb = batches.size(), nc = static_cast<size_t>(copies);
  const size_t graph_bytes = a.ggml_graph_overhead_custom(4, false);
  ioctx_ = a.ggml_init({.mem_size = nb * (1 + nc) * a.ggml_tensor_overhead() + nb * nc * graph_bytes + 4096,
                        .mem_buffer = nullptr, .no_alloc = true});
  for (int64_t n : batches) {
    Batch& b = batches_[n];
    b.x = a.ggml_new_tensor_2d(ioctx_, GGML_TYPE_F32, in, n);  // (n, in) row-major: ne0 = in
    for (ggml_tensor* wt : w_) {
      ggml_tensor* y = a.ggml_mul_mat(ioctx_, wt, b.x);  // ne = (out, n): (n, out) row-major
      ggml_cgraph* g = a.ggml_new_graph_custom(ioctx_, 4, false);
      a.ggml_build_forward_expand(g, y);
      b.y.push_back(y);
      b.graph.push_back(g);
    }
  }
  iobuf_ = a.ggml_backend_alloc_ctx_tensors_from_buft(ioctx_, a.ggml_backend_dev_buffer_type(be.dev));
  if (!iobuf_) throw mq::Error("vs_ggml: cannot allocate the activations and outputs");
}

GgmlMatmul::~GgmlMatmul() {
  const Api& a = be_.api;
  if (iobuf_) a.ggml_backend_buffer_free(iobuf_);
  if (wbuf_) a.ggml_backend_buffer_free(wbuf_);
  if (ioctx_) a.ggml_free(ioctx_);
  if (wctx_) a.ggml_free(wctx_);
}

void GgmlMatmul::set_x(int64_t n, const float* x) {
  be_.api.ggml_backend_tensor_set(batches_.at(n).x, x, 0, sizeof(float) * static_cast<size_t>(n * in_));
}

void GgmlMatmul::run(int64_t copy, int64_t n) {
  if (be_.api.ggml_backend_graph_compute(be_.backend, batches_.at(n).graph[static_cast<size_t>(copy)]) != GGML_STATUS_SUCCESS)
    throw mq::Error("vs_ggml: ggml_backend_graph_compute failed");
}

void GgmlMatmul::get_y(int64_t copy, int64_t n, float* y) const {
  be_.api.ggml_backend_tensor_get(batches_.at(n).y[static_cast<size_t>(copy)], y, 0, sizeof(float) * static_cast<size_t>(n * out_));
}

std::vector<float> GgmlMatmul::dequantized() const {
  const ggml_type_traits* tr = be_.api.ggml_get_type_traits(type_);
  const size_t row_bytes = host_.size() / static_cast<size_t>(out_);
  std::vector<float> wd(static_cast<size_t>(out_ * in_));  // (out, in)
  for (int64_t r = 0; r < out_; ++r)
    tr->to_float(host_.data() + static_cast<size_t>(r) * row_bytes, wd.data() + r * in_, in_);
  return wd;
}

size_t GgmlMatmul::weight_bytes() const { return be_.api.ggml_nbytes(w_.front()); }

std::string GgmlMatmul::buft_name() const { return be_.api.ggml_backend_buft_name(buft_); }

}  // namespace vsggml
