// fp16 / bf16 <-> fp32 conversions as raw 16-bit patterns, round-to-nearest-even.
// Eigen's half and bfloat16 do the work (F16C when the target has it, exact software otherwise).
#pragma once
#include <cstdint>

#include <Eigen/Core>

namespace mq {

inline uint16_t f32_to_f16(float x) { return Eigen::numext::bit_cast<uint16_t>(Eigen::half(x)); }
inline float f16_to_f32(uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); }
inline uint16_t f32_to_bf16(float x) { return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(x)); }
inline float bf16_to_f32(uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(h)); }

// Largest finite fp16 value; a weight or scale beyond it cannot be stored as fp16.
inline constexpr float kF16Max = 65504.0f;

}  // namespace mq
