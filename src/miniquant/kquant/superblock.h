// The K-quant super-block's width, below the formats (format.h names K schemes by it) and the K families
// (family.h lays their blocks out over it).
#pragma once

namespace mq {

// Weights per K-quant super-block (ggml's QK_K): a K scheme's input width must be a multiple of it.
inline constexpr int kSuperBlock = 256;

}  // namespace mq
