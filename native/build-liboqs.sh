#!/usr/bin/env bash
# Build liboqs as a shared library through the Rust crate in this folder and
# install it as PREFIX/VARIANT/lib/liboqs.so (+ include/oqs/oqsconfig.h, the
# library's own record of how it was built).
#
#   native/build-liboqs.sh PYTHON PREFIX [default|generic]
#
# PYTHON is the project's interpreter (it provides the libclang wheel that
# bindgen needs); VARIANT "generic" switches off all CPU-specific code.
set -euo pipefail

python=${1:?usage: build-liboqs.sh PYTHON PREFIX [default|generic]}
prefix=${2:?usage: build-liboqs.sh PYTHON PREFIX [default|generic]}
variant=${3:-default}
here=$(cd "$(dirname "$0")" && pwd)
target="$here/target/$variant"
log="$here/target/build-$variant.log"
mkdir -p "$here/target"

fail() {
    echo "error: liboqs ($variant) build failed at step: $1" >&2
    if [ -f "$log" ]; then
        echo "----- last 40 lines of $log -----" >&2
        tail -n 40 "$log" >&2
        echo "----- full log: $log -----" >&2
    fi
    exit 1
}

if ! command -v cargo >/dev/null 2>&1; then
    cat >&2 <<MSG
error: cargo (Rust) is not installed, and no usable liboqs was found.
pqlab needs liboqs, the C library under liboqs-python. Two ways out:
  1. install Rust (https://rustup.rs, or your system's rustc + cargo packages)
     and run 'make setup' again: native/ builds liboqs from crates.io;
  2. use the conda route, which takes liboqs from conda-forge:
       conda env create -f environment.yml && conda activate pqlab
MSG
    exit 1
fi
command -v cmake >/dev/null 2>&1 || fail "find cmake (install it: apt-get install cmake, or pip install cmake)"
command -v gcc >/dev/null 2>&1 || fail "find a C compiler (gcc)"

clang_dir=$("$python" -c 'import clang, os; print(os.path.join(os.path.dirname(clang.__file__), "native"))' 2>>"$log") \
    || fail "find libclang (the PyPI wheel 'libclang' in $python)"
export LIBCLANG_PATH="$clang_dir"
export BINDGEN_EXTRA_CLANG_ARGS="-isystem $(gcc -print-file-name=include)"
export CARGO_TARGET_DIR="$target"
if [ "$variant" = generic ]; then
    export CMAKE_TOOLCHAIN_FILE="$here/generic-toolchain.cmake"
elif [ "$variant" != default ]; then
    echo "error: unknown liboqs variant '$variant' (choose default or generic)" >&2
    exit 2
fi

echo "building liboqs ($variant) with cargo; log: $log"
start=$(date +%s)
cargo build --release --locked --manifest-path "$here/Cargo.toml" >"$log" 2>&1 \
    || fail "cargo build --release ($variant)"

so="$target/release/liboqs.so"
[ -f "$so" ] || fail "locate $so after the build"
include=$(ls -td "$target"/release/build/oqs-sys-*/out/include 2>/dev/null | head -n 1)
[ -n "$include" ] && [ -f "$include/oqs/oqsconfig.h" ] || fail "locate the liboqs headers and oqsconfig.h (its build-info)"

dest="$prefix/$variant"
# Stage beside the destination, then swap in with renames: an interrupted
# install never leaves a half-written library behind.
stage="$prefix/.$variant.tmp"
rm -rf "$stage" && mkdir -p "$stage/lib"
cp "$so" "$stage/lib/liboqs.so"
cp -r "$include" "$stage/include"
rm -rf "$dest.old"
[ -d "$dest" ] && mv "$dest" "$dest.old"
mv "$stage" "$dest" && rm -rf "$dest.old"
echo "installed liboqs ($variant) in $dest ($(( $(date +%s) - start )) s)"
