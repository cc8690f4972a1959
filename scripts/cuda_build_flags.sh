# Sourced by test.sh and demo.sh: the CUDA architectures and flags of their build folder.
# On a GPU host, that GPU's architecture (native). Without a GPU no device code runs, so one
# architecture is compiled to PTX alone (no ptxas) with light front-end optimization: it must
# compile, and the build takes about half the time. GPUSORT_CUDA_ARCHITECTURES and
# GPUSORT_CUDA_FLAGS override the choice.
# Without a GPU the GPU test programs are left out too (they would only skip): gpu_tests=OFF.
if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  archs=${GPUSORT_CUDA_ARCHITECTURES:-native} cuda_flags=${GPUSORT_CUDA_FLAGS:-}
  gpu_tests=${GPUSORT_BUILD_GPU_TESTS:-ON}
else
  archs=${GPUSORT_CUDA_ARCHITECTURES:-90-virtual} cuda_flags=${GPUSORT_CUDA_FLAGS:--Xcicc -O1}
  gpu_tests=${GPUSORT_BUILD_GPU_TESTS:-OFF}
fi
