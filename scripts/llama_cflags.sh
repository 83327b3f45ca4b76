#!/usr/bin/env bash
# Compiler flags for every llama.cpp build (llama-cpp-python and the tools). On x86-64, AMX is
# left out: llama.cpp's -march=native build uses AMX tiles for quantized matmuls wherever the CPU
# has them, and a kernel or sandbox that does not hand the tile state to the process turns the
# first `ldtilecfg` into a general protection fault (seen on a Sapphire Rapids host: every
# Q4_0/Q4_1/Q8_0 model crashed, F16 ran). AVX-512/VNNI kernels serve those types instead.
case "$(uname -m)" in
  x86_64|amd64) echo "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" ;;
  *) echo "" ;;
esac
