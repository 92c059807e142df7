# Real-GPU tests: the same copy patterns through the driver API, the CUDA runtime
# (static, shared, per-thread default stream), PyTorch and CuPy, each run without
# and with libcubatch.so preloaded.  run-gpu-tests.sh exits 77 (skip) before
# building anything when the machine has no GPU, so CI only needs the script.
TESTS += tests/gpu/run-gpu-tests.sh
EXTRA_DIST += \
	tests/gpu/README.md \
	tests/gpu/run-gpu-tests.sh \
	tests/gpu/build-gpu-tests.sh \
	tests/gpu/drv_copies.c \
	tests/gpu/rt_copies.cu \
	tests/gpu/rt_capture.cu tests/gpu/torch_capture.py tests/gpu/capture_legal.c \
	tests/gpu/torch_copies.py \
	tests/gpu/cupy_copies.py tests/gpu/cuda_core_copies.py
# The real-GPU campaign's other parts (bench/RESULTS.md lists the commands).
EXTRA_DIST += \
	tests/gpu/run-probe.sh tests/gpu/capture-campaign.sh \
	tests/gpu/soak.sh \
	tests/gpu/torch_soak.py \
	tests/gpu/two_gpu.py tests/gpu/run-two-gpu.sh \
	tests/gpu/campaign-41.sh
