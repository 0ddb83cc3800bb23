#!/usr/bin/env bash
# Installs what cltrap needs on a fresh Debian/Ubuntu machine, and nothing when it is all there.
#
# Why a separate script: CI runs only `scripts/test.sh` on a fresh machine, and `scripts/setup.sh`
# runs it too, so both share this one list. It is idempotent and fast on a second run: it asks
# dpkg which packages are missing and calls apt-get only for those.
#
# What it installs:
#   build tools   build-essential pkg-config binutils time
#   OpenCL        pocl-opencl-icd (the CPU device), ocl-icd-libopencl1 (the loader, with layer
#                 support), ocl-icd-opencl-dev, opencl-c-headers, clinfo
#   analyses      libclang-dev (kernel front end), libz3-dev (solver), and a clang binary for
#                 `mutate`'s Trivial Compiler Equivalence (optimised IR): Debian's libpocl2
#                 already depends on clang-15, so `clang` is installed only when none is found
#   check         oclgrind (the engine of `cltrap check`: its ICD library is registered for a
#                 child process only)
#   tests         python3-venv python3-pip (pyopencl test), and the third-party apps the tests
#                 run under the shim: clpeak, clfft-client, ffmpeg, hashcat, clblast-utils, gegl; the
#                 third-party matrix's libraries: python3-pyopencl, libclblast-dev, libviennacl-dev,
#                 and with CLTRAP_MATRIX=1 the slow rows' libboost-dev (Boost.Compute),
#                 python3-opencv, python3-gpyfft (clFFT from Python)
#   Slurm         slurm-wlm munge (the single-node cluster of the `cltrap slurm` test, which
#                 scripts/slurm-setup.sh configures and starts in a private folder)
#   Rust          via rustup, only when no `cargo` is found
set -euo pipefail

PACKAGES=(
    build-essential pkg-config binutils time ca-certificates curl git
    pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers clinfo
    libclang-dev libz3-dev
    python3-venv python3-pip
    clpeak clfft-client ffmpeg hashcat clblast-utils gegl
    python3-pyopencl libclblast-dev libviennacl-dev
    oclgrind
    slurm-wlm munge
)
# The slow matrix rows' own libraries: only with CLTRAP_MATRIX=1 (scripts/test.sh --matrix),
# so the default test run does not pay for them.
if [ -n "${CLTRAP_MATRIX:-}" ]; then
    PACKAGES+=(libboost-dev python3-opencv python3-gpyfft)
fi

say() { printf '==> %s\n' "$*"; }
die() { printf 'cltrap install: %s\n' "$*" >&2; exit 1; }

missing_packages() {
    local p
    for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            printf '%s\n' "$p"
        fi
    done
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        die "need root to run '$*' (run as root or install sudo)"
    fi
}

install_packages() {
    command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
        || die "this script supports Debian/Ubuntu (apt-get); install the packages listed in scripts/install-deps.sh by hand"
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -eq 0 ]; then
        say "system packages: all present"
        return
    fi
    say "installing ${missing[*]}"
    # `env` because sudo drops DEBIAN_FRONTEND from the environment.
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
    as_root "${apt[@]}" update -q
    # clpeak and clfft-client live in Ubuntu's "universe"; enable it there when it is missing.
    if [ -r /etc/os-release ] && grep -qi '^ID=ubuntu' /etc/os-release \
        && ! apt-cache show clfft-client >/dev/null 2>&1 && command -v add-apt-repository >/dev/null 2>&1; then
        as_root add-apt-repository -y universe
        as_root "${apt[@]}" update -q
    fi
    as_root "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}"
    mapfile -t still < <(missing_packages)
    [ "${#still[@]}" -eq 0 ] || die "apt-get did not install: ${still[*]}"
}

# The workspace needs the Rust of Cargo.toml's rust-version (1.89: std's `File::lock`, and z3 0.22
# needs 1.88); Debian's own `cargo` package is older, so an old cargo is refused with a clear
# message rather than a confusing build error.
MIN_RUST_MINOR="$(sed -n 's/^rust-version = "1\.\([0-9]*\).*/\1/p' "$(dirname "${BASH_SOURCE[0]}")/../Cargo.toml")"
MIN_RUST_MINOR="${MIN_RUST_MINOR:-89}"

ensure_cargo() {
    if command -v cargo >/dev/null 2>&1; then
        local version minor
        version="$(cargo --version)"
        minor="$(sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p' <<<"$version")"
        if [ -n "$minor" ] && [ "$minor" -lt "$MIN_RUST_MINOR" ]; then
            die "$version ($(command -v cargo)) is older than 1.$MIN_RUST_MINOR; install a current toolchain with rustup (https://rustup.rs) and put ~/.cargo/bin first in PATH"
        fi
        say "rust: $version"
        return
    fi
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
        say "rust: found in ~/.cargo/bin (add it to PATH: . \"\$HOME/.cargo/env\")"
        return
    fi
    say "rust: cargo not found, installing the stable toolchain with rustup"
    if ! curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs -o /tmp/rustup-init.sh \
        || ! sh /tmp/rustup-init.sh -y --profile minimal --default-toolchain stable; then
        die "cargo is missing and rustup could not be downloaded from https://sh.rustup.rs; install Rust >= 1.$MIN_RUST_MINOR (https://rustup.rs) and run this again"
    fi
}

# The clang binaries kernel/src/tce/clang_bin.rs tries (CLTRAP_CLANG overrides them).
CLANG_BINARIES=(clang-15 clang-14 clang-16 clang-17 clang-18 clang-19 clang-20 clang)

ensure_clang() {
    local c
    for c in "${CLANG_BINARIES[@]}"; do
        if command -v "$c" >/dev/null 2>&1; then
            say "clang: $c (for mutate's compiler-equivalence check)"
            return
        fi
    done
    say "clang: none found, installing the distribution's clang"
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
    as_root "${apt[@]}" update -q
    as_root "${apt[@]}" install -y -q --no-install-recommends clang
}

ensure_opencl_device() {
    local devices
    devices="$(clinfo -l 2>/dev/null || true)"
    if ! grep -q 'Device' <<<"$devices"; then
        die "no OpenCL device is visible (clinfo -l lists none); is pocl-opencl-icd installed and /etc/OpenCL/vendors populated?"
    fi
    say "OpenCL devices:"
    printf '%s\n' "$devices"
}

install_packages
ensure_clang
ensure_cargo
ensure_opencl_device
