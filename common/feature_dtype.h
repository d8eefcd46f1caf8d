// Feature element types of stored rows and their codec: the dataset writer
// encodes rows (EncodeFeatureRow), the store reader, the server and the client
// decode them (DecodeFeatureRow). Here, in common/, so the client decodes
// rows without linking the dataset library.
#ifndef FANOUT_COMMON_FEATURE_DTYPE_H_
#define FANOUT_COMMON_FEATURE_DTYPE_H_

#include <cstdint>
#include <cstring>
#include <string>

#include "common/status.h"

namespace fanout {

enum class FeatureDType { kFloat32, kFloat16, kInt8 };
Status ParseFeatureDType(const std::string& name, FeatureDType* out);
const char* FeatureDTypeName(FeatureDType t);
int FeatureDTypeSize(FeatureDType t);

// IEEE half conversions (round to nearest even).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

// The one feature decoder: element j of a stored row (FeatureDTypeSize(t)
// bytes per element; int8 values are q * scale), and a whole row of d
// elements into float32.
inline float DecodeFeature(FeatureDType t, double scale, const char* row, int64_t j) {
  switch (t) {
    case FeatureDType::kFloat32: {
      float f;
      std::memcpy(&f, row + j * 4, 4);
      return f;
    }
    case FeatureDType::kFloat16: {
      uint16_t h;
      std::memcpy(&h, row + j * 2, 2);
      return HalfToFloat(h);
    }
    case FeatureDType::kInt8:
      return static_cast<float>(static_cast<int8_t>(row[j]) * scale);
  }
  return 0;
}
void DecodeFeatureRow(FeatureDType t, double scale, const char* row, int64_t d, float* out);
// The encoder: d float32 values as a stored row (int8: round(v / scale),
// clamped to [-127, 127]).
void EncodeFeatureRow(FeatureDType t, double scale, const float* row, int64_t d, char* out);

}  // namespace fanout

#endif  // FANOUT_COMMON_FEATURE_DTYPE_H_
