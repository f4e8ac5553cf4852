// Finite-difference gradient checks of every training op, in double precision.
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "gradcheck.h"
#include "minigpt/ops.h"

using namespace minigpt;
using gradcheck::dot;
using gradcheck::expect_close;
using gradcheck::randn;
using V = std::vector<double>;

// Each op's scalar test loss is sum(out * R) for a fixed random R, so dout = R.

TEST_CASE("embedding backward matches finite differences (repeated tokens)") {
  std::mt19937_64 rng(42);
  const int B = 2, T = 3, d = 4, vocab = 5;
  const std::vector<int32_t> tok = {1, 3, 1, 4, 1, 0};  // token 1 repeats: gradients must add
  V wte = randn(vocab * d, rng), wpe = randn(T * d, rng), R = randn(B * T * d, rng), out(B * T * d);
  auto loss = [&] {
    ops::embedding_forward(tok.data(), B, T, d, wte.data(), wpe.data(), out.data());
    return dot(out, R);
  };
  V dwte(wte.size()), dwpe(wpe.size());
  ops::embedding_backward(tok.data(), B, T, d, R.data(), dwte.data(), dwpe.data());
  expect_close("wte", wte, dwte, loss);
  expect_close("wpe", wpe, dwpe, loss);
}

TEST_CASE("layernorm backward matches finite differences") {
  std::mt19937_64 rng(42);
  const int N = 3, d = 7;
  V x = randn(N * d, rng, 2.0), w = randn(d, rng), b = randn(d, rng), R = randn(N * d, rng);
  V y(N * d), mean(N), rstd(N);
  auto loss = [&] {
    ops::layernorm_forward(x.data(), N, d, w.data(), b.data(), y.data(), mean.data(), rstd.data());
    return dot(y, R);
  };
  loss();
  V dx(x.size()), dw(d), db(d);
  ops::layernorm_backward(R.data(), x.data(), N, d, w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data());
  expect_close("x", x, dx, loss);
  expect_close("weight", w, dw, loss);
  expect_close("bias", b, db, loss);
}

TEST_CASE("linear backward matches finite differences") {
  std::mt19937_64 rng(42);
  const int N = 4, in = 5, out = 3;
  V x = randn(N * in, rng), W = randn(out * in, rng), b = randn(out, rng), R = randn(N * out, rng), y(N * out);
  auto loss = [&] {
    ops::linear_forward(x.data(), N, in, W.data(), out, b.data(), y.data());
    return dot(y, R);
  };
  V dx(x.size()), dW(W.size()), db(out);
  ops::linear_backward(R.data(), x.data(), N, in, W.data(), out, dx.data(), dW.data(), db.data());
  expect_close("x", x, dx, loss);
  expect_close("W", W, dW, loss);
  expect_close("b", b, db, loss);
}

TEST_CASE("gelu backward matches finite differences and GPT-2 values") {
  std::mt19937_64 rng(42);
  V x = randn(40, rng, 2.0), R = randn(40, rng), y(40);
  auto loss = [&] {
    ops::gelu_forward(x.data(), 40, y.data());
    return dot(y, R);
  };
  V dx(40);
  ops::gelu_backward(R.data(), x.data(), 40, dx.data());
  expect_close("x", x, dx, loss);
  // Reference values of the tanh approximation (computed independently, to 1e-12).
  const double in[3] = {-1.0, 0.5, 2.0};
  double o[3];
  ops::gelu_forward(in, 3, o);
  CHECK(o[0] == doctest::Approx(-0.15880800939172324).epsilon(1e-12));
  CHECK(o[1] == doctest::Approx(0.34571400982514394).epsilon(1e-12));
  CHECK(o[2] == doctest::Approx(1.9545976940871754).epsilon(1e-12));
}

TEST_CASE("causal attention backward matches finite differences") {
  std::mt19937_64 rng(42);
  const int B = 2, T = 4, d = 6, H = 2;
  V qkv = randn(B * T * 3 * d, rng), R = randn(B * T * d, rng), out(B * T * d), probs(B * H * T * T);
  auto loss = [&] {
    ops::attention_forward(qkv.data(), B, T, d, H, out.data(), probs.data());
    return dot(out, R);
  };
  loss();
  V dqkv(qkv.size());
  ops::attention_backward(R.data(), qkv.data(), probs.data(), B, T, d, H, dqkv.data());
  expect_close("qkv", qkv, dqkv, loss);
}

TEST_CASE("attention is causal and rows of probs sum to one") {
  std::mt19937_64 rng(7);
  const int B = 1, T = 5, d = 4, H = 2;
  V qkv = randn(B * T * 3 * d, rng), out(B * T * d), probs(B * H * T * T);
  ops::attention_forward(qkv.data(), B, T, d, H, out.data(), probs.data());
  V out2 = out;
  // Changing the last position's k and v must leave every earlier output untouched.
  for (int j = d; j < 3 * d; ++j) qkv[(T - 1) * 3 * d + j] += 1.0;
  ops::attention_forward(qkv.data(), B, T, d, H, out2.data(), probs.data());
  for (int i = 0; i < (T - 1) * d; ++i) CHECK(out2[i] == out[i]);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < T; ++i) {
      double s = 0;
      for (int j = 0; j < T; ++j) s += probs[(h * T + i) * T + j];
      CHECK(s == doctest::Approx(1.0).epsilon(1e-12));
      for (int j = i + 1; j < T; ++j) CHECK(probs[(h * T + i) * T + j] == 0.0);
    }
}

TEST_CASE("cross-entropy gradient matches finite differences") {
  std::mt19937_64 rng(42);
  const int N = 3, Vn = 6;
  V logits = randn(N * Vn, rng, 2.0);
  const std::vector<int32_t> t = {2, 0, 5};
  auto loss = [&] { return ops::cross_entropy<double>(logits.data(), t.data(), N, Vn, nullptr); };
  V g(logits.size());
  ops::cross_entropy(logits.data(), t.data(), N, Vn, g.data());
  expect_close("logits", logits, g, loss);
  // Uniform logits give log(V).
  V zeros(N * Vn, 0.0);
  CHECK(ops::cross_entropy<double>(zeros.data(), t.data(), N, Vn, nullptr) == doctest::Approx(std::log(6.0)));
}
