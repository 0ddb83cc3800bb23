#!/bin/sh
# Manual build of one fixture, the same way the test harness builds it:
#   tests/apps/build.sh args /tmp/args && /tmp/args
set -e
here=$(cd "$(dirname "$0")" && pwd)
cc -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wno-unused-function -DKERNEL_DIR="\"$here/../kernels\"" \
   -o "$2" "$here/$1.c" -Wl,--as-needed -lOpenCL -lpthread -ldl
