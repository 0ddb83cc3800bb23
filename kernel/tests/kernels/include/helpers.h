#ifndef HELPERS_H
#define HELPERS_H
#define SCALE_BY(x) ((x) * SCALE)
inline float header_twice(float v) { return 2.0f * v; }
#endif
