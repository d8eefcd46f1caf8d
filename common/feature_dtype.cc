#include "common/feature_dtype.h"

#include <algorithm>
#include <cmath>

namespace fanout {

Status ParseFeatureDType(const std::string& name, FeatureDType* out) {
  if (name == "float32")
    *out = FeatureDType::kFloat32;
  else if (name == "float16")
    *out = FeatureDType::kFloat16;
  else if (name == "int8")
    *out = FeatureDType::kInt8;
  else if (name == "bfloat16")
    *out = FeatureDType::kBFloat16;
  else
    return Status::InvalidArgument("unknown feature dtype '" + name +
                                   "' (known: float32, float16, bfloat16, int8)");
  return Status::OK();
}

const char* FeatureDTypeName(FeatureDType t) {
  switch (t) {
    case FeatureDType::kFloat32:
      return "float32";
    case FeatureDType::kFloat16:
      return "float16";
    case FeatureDType::kInt8:
      return "int8";
    case FeatureDType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

int FeatureDTypeSize(FeatureDType t) {
  switch (t) {
    case FeatureDType::kFloat32:
      return 4;
    case FeatureDType::kFloat16:
    case FeatureDType::kBFloat16:
      return 2;
    case FeatureDType::kInt8:
      return 1;
  }
  return 4;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xffu)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf / nan
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (e <= 0) {                                                 // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(half);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu) != 0)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays a (quiet) NaN
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;  // round to nearest even (may carry into the exponent: correct)
  return static_cast<uint16_t>(x >> 16);
}

void DecodeFeatureRow(FeatureDType t, const double* scales, const char* row, int64_t d,
                      float* out) {
  if (d <= 0) return;  // no feature values (row may be null)
  switch (t) {
    case FeatureDType::kFloat32:
      std::memcpy(out, row, static_cast<size_t>(d) * 4);
      return;
    case FeatureDType::kBFloat16:
      for (int64_t j = 0; j < d; ++j) {
        uint16_t b;
        std::memcpy(&b, row + 2 * j, 2);
        out[j] = BFloat16ToFloat(b);
      }
      return;
    case FeatureDType::kFloat16:
      for (int64_t j = 0; j < d; ++j) {
        uint16_t h;
        std::memcpy(&h, row + 2 * j, 2);
        out[j] = HalfToFloat(h);
      }
      return;
    case FeatureDType::kInt8:
      for (int64_t j = 0; j < d; ++j)
        out[j] = static_cast<float>(static_cast<int8_t>(row[j]) * scales[j]);
      return;
  }
}

void ConvertFloatRow(const float* in, int64_t d, FeatureDType to, char* out) {
  switch (to) {
    case FeatureDType::kFloat16:
      for (int64_t j = 0; j < d; ++j) {
        const uint16_t h = FloatToHalf(in[j]);
        std::memcpy(out + 2 * j, &h, 2);
      }
      return;
    case FeatureDType::kBFloat16:
      for (int64_t j = 0; j < d; ++j) {
        const uint16_t b = FloatToBFloat16(in[j]);
        std::memcpy(out + 2 * j, &b, 2);
      }
      return;
    default:
      std::memcpy(out, in, static_cast<size_t>(d) * 4);
      return;
  }
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void EncodeFeatureRow(FeatureDType t, const double* scales, const float* row, int64_t d,
                      char* out) {
  switch (t) {
    case FeatureDType::kFloat32:
      std::memcpy(out, row, static_cast<size_t>(d) * 4);
      break;
    case FeatureDType::kFloat16:
    case FeatureDType::kBFloat16:
      ConvertFloatRow(row, d, t, out);
      break;
    case FeatureDType::kInt8:
      for (int64_t j = 0; j < d; ++j) {
        double q = std::nearbyint(row[j] / scales[j]);
        out[j] = static_cast<char>(static_cast<int8_t>(std::clamp(q, -127.0, 127.0)));
      }
      break;
  }
}

}  // namespace fanout
