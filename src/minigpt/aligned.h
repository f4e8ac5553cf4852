// MiniGPT's float buffers use miniquant's 64-byte aligned vector (see miniquant/aligned.h for why).
#pragma once
#include "miniquant/aligned.h"

namespace minigpt {

using mq::AlignedAllocator;
using mq::AlignedVector;
using mq::kBufferAlign;

}  // namespace minigpt
