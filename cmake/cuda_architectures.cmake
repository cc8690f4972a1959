# The oldest GPUs and toolkit gpusort is built and tested for: compute capability 8.0 (A100)
# and CUDA 12.0 (nvcc's C++20).
set(GPUSORT_MIN_COMPUTE_CAPABILITY 80)
set(GPUSORT_MIN_CUDA_VERSION 12.0)

# The compute capabilities of the GPUs that answer here (nvidia-smi), distinct, as 90 for
# 9.0; empty on a machine without one (a build host, CI).
function(gpusort_local_compute_capabilities out)
  set(found)
  find_program(GPUSORT_NVIDIA_SMI nvidia-smi)
  if(GPUSORT_NVIDIA_SMI)
    execute_process(COMMAND "${GPUSORT_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${caps}")
      foreach(cap IN LISTS caps)
        string(REPLACE "." "" cap "${cap}")
        list(APPEND found ${cap})
      endforeach()
      list(REMOVE_DUPLICATES found)
    endif()
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The distribution ("fat") list: sm_80 (A100), sm_90 (H100, H200) and every newer major
# architecture (a multiple of ten) that this nvcc can compile for, as machine code, plus the
# newest one as PTX, which the driver compiles at load time on GPUs newer than the toolkit.
# Needs CMAKE_CUDA_COMPILER, so call it after project().
function(gpusort_fat_cuda_architectures out)
  set(majors)
  # nvcc lists what it can compile for (sm_75, sm_80, sm_86, ..., sm_120, sm_121).
  execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --list-gpu-code
                  OUTPUT_VARIABLE codes RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0)
    string(REGEX MATCHALL "sm_[0-9]+[a-z]?" codes "${codes}")
    foreach(code IN LISTS codes)
      if(code MATCHES "^sm_([0-9]+0)$" AND CMAKE_MATCH_1 GREATER_EQUAL 80)
        list(APPEND majors ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endif()
  if(NOT majors)
    # An nvcc without --list-gpu-code: what each release added.
    set(v ${CMAKE_CUDA_COMPILER_VERSION})
    if(v VERSION_GREATER_EQUAL 13.0)
      set(majors 80 90 100 110 120)
    elseif(v VERSION_GREATER_EQUAL 12.8)
      set(majors 80 90 100 120)
    elseif(v VERSION_GREATER_EQUAL 11.8)
      set(majors 80 90)
    else()
      set(majors 80)
    endif()
  endif()
  list(REMOVE_DUPLICATES majors)
  list(SORT majors COMPARE NATURAL)
  list(GET majors -1 newest)
  set(archs)
  foreach(major IN LISTS majors)
    list(APPEND archs ${major}-real)
  endforeach()
  list(APPEND archs ${newest}-virtual)
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()
