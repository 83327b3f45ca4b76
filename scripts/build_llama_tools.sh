#!/usr/bin/env bash
# Build llama.cpp's own command-line tools (llama-bench, llama-perplexity, llama-quantize,
# llama-imatrix, llama-server, llama-fit-params, and the RPC backend's ggml-rpc-server that stands in
# for a second device) from the llama.cpp source vendored in the pinned llama-cpp-python sdist, so
# that the engine and the reference tools are the same code. Nothing prebuilt is fetched.
set -euo pipefail
VERSION="${1:?usage: build_llama_tools.sh LLAMA_CPP_PYTHON_VERSION [PIP]}"
PIP="${2:-pip}"
case "$PIP" in /*) ;; */*) PIP="$PWD/$PIP" ;; esac  # the script changes directory below
ROOT="${EDGEPICK_CACHE:-$HOME/.cache/edgepick}/llama.cpp-$VERSION"
BIN="$ROOT/bin"
TOOLS="llama-bench llama-perplexity llama-quantize llama-imatrix llama-server llama-fit-params ggml-rpc-server"
FLAGS="$(bash "$(dirname "$0")/llama_cflags.sh")"  # the engine's flags (no AMX on x86-64)
BACKEND="${GGML_CMAKE:-}"  # an accelerator backend's CMake flags (Makefile GGML=; none: CPU)
STAMP="flags:$FLAGS rpc${BACKEND:+ $BACKEND}"
have_all=1
for t in $TOOLS; do [ -x "$BIN/$t" ] || have_all=0; done
[ "$(cat "$BIN/.cflags" 2>/dev/null)" = "$STAMP" ] || have_all=0  # built with other flags
if [ "$have_all" = 1 ]; then echo "llama.cpp tools present in $BIN"; exit 0; fi
mkdir -p "$ROOT"
cd "$ROOT"
if [ ! -d src ]; then
  "$PIP" download --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d dl -q
  mkdir -p src && tar xzf dl/llama_cpp_python-"$VERSION".tar.gz -C src --strip-components=1
fi
cmake -S src/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_RPC=ON \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF $BACKEND >/dev/null  # a backend left on by an earlier build goes
cmake --build build -j "$(nproc)" --target $TOOLS >build.log 2>&1 || { tail -40 build.log; exit 1; }
mkdir -p "$BIN"
for t in $TOOLS; do cp "build/bin/$t" "$BIN/"; done
echo "$STAMP" > "$BIN/.cflags"
echo "llama.cpp tools built in $BIN"
