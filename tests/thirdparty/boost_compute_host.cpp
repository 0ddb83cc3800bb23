/* Third-party matrix: Boost.Compute (Debian libboost-dev, header-only) driven by a small host
 * written after its documented examples. Every algorithm generates and builds its own OpenCL
 * program at run time (transform with a lambda, accumulate, inclusive_scan, sort, reverse,
 * count_if). Boost.Compute's offline binary cache is off unless BOOST_COMPUTE_USE_OFFLINE_CACHE
 * is defined, so every program is built from source. The host checks every result against a
 * plain C++ computation and prints one deterministic line. */
#define CL_TARGET_OPENCL_VERSION 120
#define BOOST_COMPUTE_MAX_CL_VERSION 120
#include <boost/compute/algorithm/accumulate.hpp>
#include <boost/compute/algorithm/copy.hpp>
#include <boost/compute/algorithm/count_if.hpp>
#include <boost/compute/algorithm/inclusive_scan.hpp>
#include <boost/compute/algorithm/reverse.hpp>
#include <boost/compute/algorithm/sort.hpp>
#include <boost/compute/algorithm/transform.hpp>
#include <boost/compute/container/vector.hpp>
#include <boost/compute/functional/math.hpp>
#include <boost/compute/lambda.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

namespace compute = boost::compute;

int main() {
    compute::device dev = compute::system::default_device();
    compute::context ctx(dev);
    compute::command_queue q(ctx, dev);
    const int n = 2048;
    std::vector<float> host(n);
    std::vector<int> ints(n);
    unsigned s = 12345;
    for (int i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        host[i] = (float)((s >> 8) % 1000) / 10.0f;
        ints[i] = (int)((s >> 4) % 9) - 4;
    }
    compute::vector<float> v(host.begin(), host.end(), q);
    compute::vector<float> r(n, ctx);
    using compute::lambda::_1;
    compute::transform(v.begin(), v.end(), r.begin(), _1 * 2.0f + 1.0f, q);
    std::vector<float> got(n);
    compute::copy(r.begin(), r.end(), got.begin(), q);
    bool ok = true;
    for (int i = 0; i < n; i++) ok = ok && got[i] == host[i] * 2.0f + 1.0f;

    compute::vector<int> iv(ints.begin(), ints.end(), q);
    int sum = compute::accumulate(iv.begin(), iv.end(), 0, q);
    ok = ok && sum == std::accumulate(ints.begin(), ints.end(), 0);

    compute::vector<int> scanned(n, ctx);
    compute::inclusive_scan(iv.begin(), iv.end(), scanned.begin(), q);
    std::vector<int> gs(n), want(n);
    compute::copy(scanned.begin(), scanned.end(), gs.begin(), q);
    std::partial_sum(ints.begin(), ints.end(), want.begin());
    ok = ok && gs == want;

    int negatives = (int)compute::count_if(iv.begin(), iv.end(), _1 < 0, q);
    ok = ok && negatives == (int)std::count_if(ints.begin(), ints.end(), [](int x) { return x < 0; });

    compute::sort(v.begin(), v.end(), q);
    compute::reverse(v.begin(), v.end(), q);
    compute::copy(v.begin(), v.end(), got.begin(), q);
    std::sort(host.begin(), host.end());
    std::reverse(host.begin(), host.end());
    ok = ok && got == host;

    std::printf("boost.compute transform, accumulate, inclusive_scan, count_if, sort, reverse %s\n",
                ok ? "ok" : "WRONG");
    return ok ? 0 : 1;
}
