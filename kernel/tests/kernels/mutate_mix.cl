// Every traditional and most GPU operators have something to mutate here; every index is
// masked into its buffer, so no mutant can write outside one.
int mix(int a, int b) {
    int r = a;
    for (int k = 0; k < 3; k++)
        r += (a ^ b) << 1;
    return !(r > b) ? r - b : ~r;
}

__kernel void mutate_mix(__global const int* in, __global int* out, __global int* count) {
    size_t g = get_global_id(0);
    int v = in[g & 15u];
    int w = in[(g + 1) & 15u];
    if (v < w && v != 0 || w >= 7)
        atomic_inc(&count[g & 3u]);
    int x = mix(v, w) * 3 / 2 % 11;
    x |= v & 6;
    x >>= 1;
    v++;
    --w;
    out[g & 15u] = -x + v - w;
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (get_local_id(0) == 0)
        atomic_add(&count[4 + (get_group_id(0) & 3u)], x);
}
