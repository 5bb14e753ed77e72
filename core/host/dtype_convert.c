/* The narrow-float conversions of dtype_narrow.h as exported functions, for tests and tools.
 * The reduction kernels use the inline versions directly. */
#include "host/dtype_narrow.h"
#include "host/reduce.h"

float half_to_float(uint16_t h) { return cvt_f16_to_f32(h); }
uint16_t float_to_half(float f) { return cvt_f32_to_f16(f); }
float bf16_to_float(uint16_t h) { return cvt_bf16_to_f32(h); }
uint16_t float_to_bf16(float f) { return cvt_f32_to_bf16(f); }
float fp8e4m3_to_float(uint8_t v) { return cvt_e4m3_to_f32(v); }
uint8_t float_to_fp8e4m3(float f) { return cvt_f32_to_e4m3(f); }
float fp8e5m2_to_float(uint8_t v) { return cvt_e5m2_to_f32(v); }
uint8_t float_to_fp8e5m2(float f) { return cvt_f32_to_e5m2(f); }
