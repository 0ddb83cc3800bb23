#include "ids.h"
__kernel void uses_header(__global uint* out) { out[header_gid()] = 1u; }
