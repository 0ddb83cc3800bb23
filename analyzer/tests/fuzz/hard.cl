// CLFuzz's hard cases, one kernel each (cltrap fuzz/solve tests).

__kernel void magic(__global int *out, int x) {
    size_t gid = get_global_id(0);
    if (x == -2987) {
        out[gid] = 1;
    } else {
        out[gid] = 2;
    }
}

__kernel void id_equal(__global int *out, uint obs_t) {
    uint idy = get_global_id(0);
    if (obs_t == idy) {
        out[idy] = 7;
    }
}

__kernel void bound_check(__global float *out, __global const float *in, uint n) {
    size_t tid = get_global_id(0);
    if (tid < n) {
        out[tid] = in[tid] * 2.0f;
    }
}

__kernel void nested(__global int *out, int a, int b, int c, int d, int e) {
    int r = 0;
    if (a > 100 && a < 110) {
        if (b > -50 && b < -40) {
            if (c > 1000 && c < 1003) {
                if (d > 7 && d < 9) {
                    if (e > 123456 && e < 123460) {
                        r = 5;
                    }
                }
            }
        }
    }
    out[get_global_id(0)] = r;
}

__kernel void floats(__global float *out, float x, float y) {
    size_t gid = get_global_id(0);
    float v = x * 2.0f;
    if (v > 3.5f && v < 3.75f) {
        out[gid] = 1.0f;
    } else if (x + y == 1.0e-3f) {
        out[gid] = 2.0f;
    } else {
        out[gid] = 0.0f;
    }
}

__kernel void switcher(__global int *out, int sel) {
    int r;
    switch (sel) {
    case 3: r = 30; break;
    case 1000: r = 1; // fall through
    case 1001: r = 2; break;
    default: r = -1;
    }
    out[get_global_id(0)] = r;
}

__kernel void trip(__global int *out, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) {
        s += i;
    }
    out[get_global_id(0)] = s;
}

__kernel void element(__global int *out, __global const int *data) {
    size_t gid = get_global_id(0);
    if (data[gid] == 0x5eed1234) {
        out[gid] = 1;
    } else {
        out[gid] = 0;
    }
}

__kernel void dead(__global int *out, uchar c) {
    int v = c;
    if (v > 300) {
        out[0] = 1;
    }
    out[get_global_id(0)] = (c << 9) == 0 ? 5 : 6;
}

// Writes wherever `at` says: the guard zones around the buffer catch small overruns (before
// or after it), a worker crash the large ones; either way the campaign goes on.
__kernel void overrun(__global int *out, int at) {
    if (get_global_id(0) == 0) {
        out[at] = 1;
    }
    if (at == 123456789) { // keeps the campaign going until saturation
        out[1] = 2;
    }
}

// Structs: fields mutated by type, and read and written by the solver.
typedef struct {
    char tag;
    float weight;
    int key;
} Item;

__kernel void structs(__global Item *items, __global int *out, Item probe) {
    size_t gid = get_global_id(0);
    if (items[gid].key == 77777 && items[gid].weight > 2.5f) {
        out[gid] = 1;
        items[gid].tag = 1;
    }
    if (probe.tag == 'q') {
        out[gid] += 2;
    }
}

// Local and group ids under a NULL local size (as many applications launch): the solver
// picks a local size for its case.
__kernel void local_eq(__global int *out, uint x) {
    if (get_local_id(0) == x && get_group_id(0) == 0 && x * 12345u == 308625u) {
        out[get_global_id(0)] = 1;
    }
}

// A buffer element that must hold the one value whose product wraps to a given word (a
// multiplicative inverse modulo 2^32): no mutation finds it, the solver must.
__kernel void element_inverse(__global int *out, __global const uint *data) {
    size_t gid = get_global_id(0);
    out[gid] = (data[gid] * 2654435761u == 0x12345678u) ? 1 : 0;
}
