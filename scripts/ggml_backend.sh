#!/usr/bin/env bash
# CMake flags for llama.cpp's accelerator backend, from the Makefile's GGML variable: nothing for
# the CPU (the default), or one of ggml's GPU backends. The same flags go to the engine
# (llama-cpp-python reads CMAKE_ARGS) and to the tools (scripts/build_llama_tools.sh), so the two
# run the same code. The backend's SDK must already be installed (CUDA toolkit, Vulkan SDK and
# glslc, Xcode on macOS); docs/placement.md says how to check the build found the device.
case "${1:-}" in
  ""|cpu) echo "" ;;
  cuda) echo "-DGGML_CUDA=ON" ;;
  vulkan) echo "-DGGML_VULKAN=ON" ;;
  metal) echo "-DGGML_METAL=ON" ;;
  *) echo "GGML=$1: expected cuda, vulkan or metal (empty: CPU only)" >&2; exit 2 ;;
esac
