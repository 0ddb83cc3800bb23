/* Fixture: ROUNDS launches of `scramble`, each turning a 1 MiB buffer into new incompressible
 * words (clFinish after each, as many real applications do; with `storm`, all enqueued
 * without waiting, as a time-stepping loop does), then two launches of `fold` that read it.
 * Under a small CLTRAP_MAX_MB the capture must degrade without costing any kernel all of its
 * replayable launches. With `fork`, a child is forked (no exec) after the first round and
 * lives, calling no OpenCL, until the parent has finished every round: a forking server or
 * Python's multiprocessing; the parent must not wait on anything the child holds.
 * Usage: budget [ROUNDS] [storm|fork]   (default 24) */
#include "common.h"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

enum { WORDS = 1 << 18, OUT = 256 };

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 24;
    int storm = argc > 2 && strcmp(argv[2], "storm") == 0;
    int forks = argc > 2 && strcmp(argv[2], "fork") == 0;
    int gate[2] = {-1, -1};
    pid_t child = -1;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    open_queue(&dev, &ctx, &q);
    cl_int err;
    cl_program p = build_program(ctx, dev, "budget.cl", "");
    cl_kernel scramble = make_kernel(p, "scramble");
    cl_kernel fold = make_kernel(p, "fold");
    cl_uint *host = malloc(sizeof(cl_uint) * WORDS);
    for (cl_uint i = 0; i < WORDS; i++) host[i] = i;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(cl_uint) * WORDS, host, &err);
    CHECK_ERR(err);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(cl_uint) * OUT, NULL, &err);
    CHECK_ERR(err);
    size_t g = WORDS;
    CHECK(clSetKernelArg(scramble, 0, sizeof x, &x));
    for (cl_uint r = 0; r < (cl_uint)rounds; r++) {
        CHECK(clSetKernelArg(scramble, 1, sizeof r, &r));
        CHECK(clEnqueueNDRangeKernel(q, scramble, 1, NULL, &g, NULL, 0, NULL, NULL));
        if (!storm) CHECK(clFinish(q));
        for (cl_uint i = 0; i < WORDS; i++) host[i] = mix(host[i] ^ (r * 0x9e3779b9U) ^ i);
        if (forks && r == 0) {
            /* The child waits until the parent closes the gate's write end. */
            EXPECT(pipe2(gate, O_CLOEXEC) == 0, "pipe");
            fflush(NULL);
            child = fork();
            EXPECT(child >= 0, "fork");
            if (child == 0) {
                char c;
                close(gate[1]);
                while (read(gate[0], &c, 1) > 0) {
                }
                _exit(0);
            }
            close(gate[0]);
        }
    }
    if (child > 0) {
        int status = 0;
        close(gate[1]);
        EXPECT(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
                   WEXITSTATUS(status) == 0,
               "the forked child ended with status %d", status);
    }
    cl_uint width = WORDS / OUT;
    CHECK(clSetKernelArg(fold, 0, sizeof x, &x));
    CHECK(clSetKernelArg(fold, 1, sizeof out, &out));
    CHECK(clSetKernelArg(fold, 2, sizeof width, &width));
    size_t go = OUT;
    for (int twice = 0; twice < 2; twice++) {
        CHECK(clEnqueueNDRangeKernel(q, fold, 1, NULL, &go, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
    }
    cl_uint got[OUT];
    CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    for (int o = 0; o < OUT; o++) {
        cl_uint want = 0;
        for (cl_uint j = 0; j < width; j++) want ^= host[o * width + j];
        EXPECT(got[o] == want, "out[%d]=%u want %u", o, got[o], want);
    }
    free(host);
    return finish("budget");
}
