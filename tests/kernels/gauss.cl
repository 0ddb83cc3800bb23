// Rodinia's OpenCL Gaussian elimination (`gaussian`): for each pivot t, Fan1 computes the
// multipliers of column t into m, Fan2 subtracts the scaled pivot row from the sub-block
// below it and updates b. For the derived-inputs test (the disk budget's replay chains).

__kernel void Fan1(__global float *m, __global float *a, __global float *b,
                   const int size, const int t) {
    int g = get_global_id(0);
    if (g < size - 1 - t)
        m[size * (g + t + 1) + t] = a[size * (g + t + 1) + t] / a[size * t + t];
}

__kernel void Fan2(__global float *m, __global float *a, __global float *b,
                   const int size, const int t) {
    int x = get_global_id(0), y = get_global_id(1);
    if (x < size - 1 - t && y < size - t) {
        a[size * (x + 1 + t) + (y + t)] -= m[size * (x + 1 + t) + t] * a[size * t + (y + t)];
        if (y == 0)
            b[x + 1 + t] -= m[size * (x + 1 + t) + (y + t)] * b[t];
    }
}
