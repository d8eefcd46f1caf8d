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

// kBFloat16: the top 16 bits of a float32 (round to nearest even); kInt8:
// q * scale[j] with one scale per feature column j.
enum class FeatureDType { kFloat32, kFloat16, kInt8, kBFloat16 };
Status ParseFeatureDType(const std::string& name, FeatureDType* out);
const char* FeatureDTypeName(FeatureDType t);
int FeatureDTypeSize(FeatureDType t);

// IEEE half conversions (round to nearest even).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
// bfloat16 conversions (round to nearest even; NaN stays NaN).
uint16_t FloatToBFloat16(float f);
inline float BFloat16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// The one feature decoder: element j of a stored row (FeatureDTypeSize(t)
// bytes per element; int8 values are q * scales[j], one scale per column;
// `scales` is read for int8 only and may be null otherwise), and a whole row
// of d elements into float32.
inline float DecodeFeature(FeatureDType t, const double* scales, const char* row, int64_t j) {
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
    case FeatureDType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, row + j * 2, 2);
      return BFloat16ToFloat(b);
    }
    case FeatureDType::kInt8:
      return static_cast<float>(static_cast<int8_t>(row[j]) * scales[j]);
  }
  return 0;
}
void DecodeFeatureRow(FeatureDType t, const double* scales, const char* row, int64_t d, float* out);
// The encoder: d float32 values as a stored row (int8: round(v / scales[j]),
// clamped to [-127, 127]).
void EncodeFeatureRow(FeatureDType t, const double* scales, const float* row, int64_t d, char* out);

// d float32 values as float16 or bfloat16 elements (the types a caller may
// keep rows in: Session::Features' `as`); float32 copies.
void ConvertFloatRow(const float* in, int64_t d, FeatureDType to, char* out);

// The int8 scale of a column whose largest |value| is max_abs (q = 127 at it).
inline double Int8ColumnScale(float max_abs) { return max_abs > 0 ? max_abs / 127.0 : 1.0; }

}  // namespace fanout

#endif  // FANOUT_COMMON_FEATURE_DTYPE_H_
