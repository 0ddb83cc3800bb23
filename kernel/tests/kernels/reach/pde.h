// A header whose functions a pass cannot rewrite (its text is not the main file): one no
// kernel calls, which asks for group-dependent ids (as a schedule permutation rewrites them),
// and one the kernel calls, which needs nothing rewritten.
float diffuse_pde(__global const float* t, int w) {
  int x = get_global_id(0);
  if (x > 0 && x < w - 1)
    return 0.25f * t[x - 1] + 0.5f * t[x] + 0.25f * t[x + 1];
  return t[x];
}

float scale(float v) { return v * 2.0f; }
