#!/bin/sh
# Prepares target/kdev: instrumented kernels, a tiny C OpenCL runner and the cases to run on
# another machine (no cargo or libclang needed there). Run from the repository root, then e.g.
# with the device tool: carry target/kdev and run `cd target/kdev && sh device.sh`.
set -e
K=kernel/tests/kernels
E=target/debug/examples
O=target/kdev
cargo build -q -p cltrap-kernel --example cover --example permute
mkdir -p $O
cc -O1 -o $O/run kernel/tests/device/run.c -lOpenCL
cp -L /usr/lib/x86_64-linux-gnu/libOpenCL.so.1 $O/ 2>/dev/null || true
$E/cover $K/barrier_divergence.cl > $O/bd_cov.cl 2>$O/bd.json
$E/cover kernel/tests/device/loop_divergence.cl > $O/d3_cov.cl 2>$O/d3.json
$E/cover $K/early_return.cl > $O/er_cov.cl 2>$O/er.json
$E/permute $K/ids.cl > $O/ids_p.cl 2>/dev/null
cp $K/ids.cl $K/early_return.cl $O/
zeros() { python3 -c "import json,sys; m=json.load(open('$1')); n=8+len(m['slots'])+len(m['barriers'])*$2; print('vals:%d' % n + ',0' * (n - 1))"; }
cat > $O/device.sh <<EOS
# Uses the NVIDIA ICD when the machine has no vendors file for it.
export LD_LIBRARY_PATH=\$PWD
[ -e /etc/OpenCL/vendors/nvidia.icd ] || { mkdir -p v; echo libnvidia-opencl.so.1 > v/nvidia.icd; export OCL_ICD_VENDORS=\$PWD/v; }
set -x
timeout 60 ./run bd_cov.cl diverge '' 1 16 4 - buf:16 $(zeros $O/bd.json 4)
timeout 60 ./run d3_cov.cl diverge '' 1 16 4 - buf:16 $(zeros $O/d3.json 4)
timeout 60 ./run er_cov.cl early '' 1 8 4 - buf:8 u32:6 $(zeros $O/er.json 2)
timeout 60 ./run early_return.cl early '' 1 8 4 - buf:8 u32:6
timeout 60 ./run ids.cl ids '' 3 8,4,2 2,2,1 3,5,7 buf:256 | head -1 | md5sum
timeout 60 ./run ids_p.cl ids '' 3 8,4,2 2,2,1 3,5,7 buf:256 vals:0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15 | head -1 | md5sum
timeout 60 ./run ids_p.cl ids '' 3 8,4,2 2,2,1 3,5,7 buf:256 vals:5,3,0,12,9,1,15,2,7,4,14,6,11,8,13,10 | head -1 | md5sum
EOS
echo "prepared $O"
