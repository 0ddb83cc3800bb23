set -u
export LD_LIBRARY_PATH=$PWD/target/devbench
mkdir -p target/release /tmp/empty && cp target/devbench/cltrap target/devbench/libcltrap.so target/release/
export CLTRAP_SHIM=$PWD/target/release/libcltrap.so
NV="OCL_ICD_VENDORS=/tmp/empty OCL_ICD_FILENAMES=$(ldconfig -p | grep -m1 libnvidia-opencl.so.1 | awk '{print $NF}')"
nvidia-smi --query-gpu=name --format=csv,noheader
t() { local s=$(date +%s.%N); "$@" > /tmp/o.txt 2>&1; local rc=$?; local e=$(date +%s.%N); python3 -c "print(f'{$e-$s:.3f}', end=' ')"; echo "rc=$rc $(tail -1 /tmp/o.txt)"; }
for r in 1 2 3; do echo -n "native: "; t env $NV target/bench/gauss 1024; done
rm -rf /tmp/cap; echo -n "capture: "; t env $NV target/release/cltrap run --out /tmp/cap --buffers full --derive-after-mb 512 -- target/bench/gauss 1024
for r in 1 2; do echo -n "replay new: "; t env $NV target/devbench/cltrap replay /tmp/cap; done
echo -n "replay old: "; t env $NV timeout 200 target/devbench/cltrap-old replay /tmp/cap
echo -n "replay new on PoCL: "; t env -u OCL_ICD_VENDORS -u OCL_ICD_FILENAMES target/devbench/cltrap replay /tmp/cap
grep -c . /tmp/cap/launches.jsonl
