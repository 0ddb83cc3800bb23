# Third-party matrix: OpenCV's OpenCL kernels (Debian python3-opencv) through its transparent
# API: cv2.UMat operations run OpenCV's own image kernels (blur, Sobel, threshold, resize,
# colour conversion, arithmetic) on the OpenCL device. OpenCV keeps a binary cache of its
# programs; the caller points it at a private folder (OPENCV_OPENCL_CACHE_DIR) or turns it
# off, and picks the CPU device (OPENCV_OPENCL_DEVICE). Each result is compared with the same
# operation on the CPU path (cv2.ocl off); one deterministic line is printed.
import sys
import numpy as np, cv2
cv2.ocl.setUseOpenCL(True)
if not cv2.ocl.haveOpenCL() or not cv2.ocl.useOpenCL():
    print("opencv: no OpenCL device", file=sys.stderr)
    sys.exit(2)
rng = np.random.default_rng(9)
img = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
def ops(x):
    gray = cv2.cvtColor(x, cv2.COLOR_BGR2GRAY)
    blurred = cv2.blur(gray, (3, 3))
    sob = cv2.Sobel(blurred, cv2.CV_16S, 1, 0)
    _, th = cv2.threshold(blurred, 100, 255, cv2.THRESH_BINARY)
    small = cv2.resize(gray, (32, 24), interpolation=cv2.INTER_LINEAR)
    summed = cv2.add(gray, blurred)
    return [gray, blurred, sob, th, small, summed]
gpu = [cv2.UMat.get(u) for u in ops(cv2.UMat(img))]
cv2.ocl.setUseOpenCL(False)
cpu = ops(img)
worst = max(int(np.abs(g.astype(np.int32) - c.astype(np.int32)).max()) for g, c in zip(gpu, cpu))
# OpenCL and CPU paths may round differently by one step (resize's fixed point).
print("opencv umat cvtColor, blur, Sobel, threshold, resize, add:", "ok" if worst <= 1 else "WRONG %d" % worst)
