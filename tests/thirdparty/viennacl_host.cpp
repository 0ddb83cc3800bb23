// Third-party matrix: ViennaCL (Debian libviennacl-dev, header-only) on OpenCL. ViennaCL
// generates its kernels' source at run time and builds one program per operation family;
// this host runs vector arithmetic, an inner product, a dense matrix-vector product and a
// matrix-matrix product, checks them against plain C++ and prints one deterministic line.
#define VIENNACL_WITH_OPENCL
#include <viennacl/vector.hpp>
#include <viennacl/matrix.hpp>
#include <viennacl/linalg/inner_prod.hpp>
#include <viennacl/linalg/prod.hpp>
#include <viennacl/linalg/norm_2.hpp>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
    const std::size_t n = 96, m = 64;
    std::vector<float> hx(n), hy(n), hA(m * n), hB(n * m);
    for (std::size_t i = 0; i < n; ++i) { hx[i] = float(i % 7) - 3.0f; hy[i] = 0.5f * float(i % 5); }
    for (std::size_t i = 0; i < m * n; ++i) { hA[i] = float((i * 3) % 11) * 0.25f - 1.0f; hB[i] = float((i * 5) % 13) * 0.125f; }
    viennacl::vector<float> x(n), y(n), z(n), r(m);
    viennacl::matrix<float> A(m, n), B(n, m), C(m, m);
    viennacl::fast_copy(hx.begin(), hx.end(), x.begin());
    viennacl::fast_copy(hy.begin(), hy.end(), y.begin());
    std::vector<std::vector<float>> a2(m, std::vector<float>(n)), b2(n, std::vector<float>(m));
    for (std::size_t i = 0; i < m; ++i) for (std::size_t j = 0; j < n; ++j) a2[i][j] = hA[i * n + j];
    for (std::size_t i = 0; i < n; ++i) for (std::size_t j = 0; j < m; ++j) b2[i][j] = hB[i * m + j];
    viennacl::copy(a2, A);
    viennacl::copy(b2, B);

    z = 2.0f * x + y;                                   // vector kernels
    float dot = viennacl::linalg::inner_prod(x, y);    // reduction
    float nrm = viennacl::linalg::norm_2(z);
    r = viennacl::linalg::prod(A, z);                  // matrix-vector
    C = viennacl::linalg::prod(A, B);                  // matrix-matrix

    std::vector<float> gz(n), gr(m);
    viennacl::fast_copy(z.begin(), z.end(), gz.begin());
    viennacl::fast_copy(r.begin(), r.end(), gr.begin());
    std::vector<std::vector<float>> gC(m, std::vector<float>(m));
    viennacl::copy(C, gC);

    int bad = 0;
    double wdot = 0, wn = 0;
    std::vector<float> wz(n);
    for (std::size_t i = 0; i < n; ++i) { wz[i] = 2.0f * hx[i] + hy[i]; wdot += hx[i] * hy[i]; wn += wz[i] * wz[i]; if (std::fabs(gz[i] - wz[i]) > 1e-5f) ++bad; }
    if (std::fabs(dot - wdot) > 1e-2) ++bad;
    if (std::fabs(nrm - std::sqrt(wn)) > 1e-2) ++bad;
    for (std::size_t i = 0; i < m; ++i) {
        double acc = 0;
        for (std::size_t j = 0; j < n; ++j) acc += a2[i][j] * wz[j];
        if (std::fabs(gr[i] - acc) > 1e-2) ++bad;
        for (std::size_t j = 0; j < m; ++j) {
            double c = 0;
            for (std::size_t k = 0; k < n; ++k) c += a2[i][k] * b2[k][j];
            if (std::fabs(gC[i][j] - c) > 1e-2) ++bad;
        }
    }
    std::printf("viennacl_host: axpy, inner_prod, norm_2, gemv, gemm %s\n", bad ? "WRONG" : "ok");
    return bad ? 1 : 0;
}
