// Kernels whose random inputs crash or hang: what real kernels do with indices and trip
// counts taken from their inputs. Campaigns must survive them (tests/fuzz_pocl.rs).

// Sparse matrix-vector product in CSR form (as in SHOC / Rodinia): row pointers and column
// indices come from buffers, so random elements read gigabytes past the buffers.
__kernel void spmv_csr(__global const float *val, __global const int *cols,
                       __global const int *row_ptr, __global const float *x,
                       __global float *y, int rows) {
    int row = get_global_id(0);
    if (row < rows) {
        float sum = 0.0f;
        int start = row_ptr[row];
        int end = row_ptr[row + 1];
        for (int j = start; j < end; j++) {
            int col = cols[j];
            if (val[j] > 0.0f)
                sum += val[j] * x[col];
            else
                sum -= val[j] * x[col];
        }
        y[row] = sum;
    }
}

// A walk whose step comes from the input: a step of 0 never reaches `stop`.
__kernel void walk(__global int *out, int start, int step, int stop) {
    int x = start;
    int n = 0;
    while (x < stop) {
        x += step;
        n++;
    }
    out[get_global_id(0)] = n > 3 ? 1 : 0;
}

// Crashes whatever its inputs: every input class is a finding and no case is kept.
__kernel void always_wild(__global int *out, int v) {
    size_t far = (size_t)1 << 40;
    out[get_global_id(0) + far] = v;
}
