/* Fixture: kernels whose pointer parameters lack `const` (tests/kernels/unwritten.cl), for the
 * capture's reading of which ones a kernel's source never writes.
 *
 * Usage: unwritten KERNEL ROUNDS  runs one of `reads_const`, `reads`, `reads_through_macro`,
 *                                 `reads_maybe` ROUNDS times over the same two buffers;
 *        unwritten all            runs every kernel that writes `src` once in turn, then
 *                                 `doubles` with one buffer as both arguments (it then
 *                                 writes it).
 * Checks every result on the host; prints "unwritten: ok". */
#include "common.h"

enum { N = 256 };

static const char *WRITERS[] = {"via_helper", "via_macro", "via_expanded_macro",
                                "via_macro_element", "via_deref",
                                "via_parentheses", "via_alias", "via_vstore", "via_atomic",
                                "via_component"};

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: unwritten KERNEL ROUNDS | unwritten all\n");
        return 2;
    }
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    /* The kernel file includes unwritten.h from the same folder. */
    const char *dir = getenv("FIXTURE_KERNEL_DIR");
    char options[4200];
    snprintf(options, sizeof options, "-I %s", dir && *dir ? dir : KERNEL_DIR);
    cl_program p = build_program(ctx, dev, "unwritten.cl", options);
    int host[N], out[N];
    for (int i = 0; i < N; i++) host[i] = (int)(mix((cl_uint)i) % 1000);
    cl_int err;
    cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CHECK_ERR(err);
    cl_mem dst = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof out, NULL, &err);
    CHECK_ERR(err);
    size_t g = N;
    int n = 1;
    if (strcmp(argv[1], "all") != 0) {
        int rounds = argc > 2 ? atoi(argv[2]) : 1;
        cl_kernel k = make_kernel(p, argv[1]);
        CHECK(clSetKernelArg(k, 0, sizeof src, &src));
        CHECK(clSetKernelArg(k, 1, sizeof dst, &dst));
        if (strcmp(argv[1], "reads_maybe") == 0) CHECK(clSetKernelArg(k, 2, sizeof n, &n));
        for (int r = 0; r < rounds; r++)
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, dst, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
        for (int i = 0; i < N; i++) EXPECT(out[i] == host[i] * 3 + host[1], "element %d: %d", i, out[i]);
        return finish("unwritten");
    }
    int want[N];
    memcpy(want, host, sizeof want);
    for (size_t w = 0; w < sizeof WRITERS / sizeof *WRITERS; w++) {
        cl_kernel k = make_kernel(p, WRITERS[w]);
        CHECK(clSetKernelArg(k, 0, sizeof src, &src));
        CHECK(clSetKernelArg(k, 1, sizeof dst, &dst));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
        int is_component = strcmp(WRITERS[w], "via_component") == 0;
        for (int i = 0; i < N; i++) want[i] += is_component ? i % 2 : 1;
    }
    cl_kernel k = make_kernel(p, "doubles");
    CHECK(clSetKernelArg(k, 0, sizeof src, &src));
    CHECK(clSetKernelArg(k, 1, sizeof src, &src));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    int got[N];
    CHECK(clEnqueueReadBuffer(q, src, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int i = 0; i < N; i++) EXPECT(got[i] == want[i] * 2, "element %d: %d, want %d", i, got[i], want[i] * 2);
    return finish("unwritten");
}
