# The cuda back-end on the CUDA double (a discrete device), in every protocol;
# included by CMakeLists.txt in the normal and the sanitizer build.
adsm_test(cuda_device_tests cuda_device_test.cpp)
adsm_audit_fault_handler(cuda_device_tests)
add_dependencies(cuda_device_tests fake_cuda start_failure_probe)
target_compile_definitions(cuda_device_tests PRIVATE START_FAILURE_PROBE="$<TARGET_FILE:start_failure_probe>")
set(on_double "ADSM_DEVICE=cuda;LD_LIBRARY_PATH=${doubles_dir};FAKE_CUDA_MEMORY=268435456")
foreach(p batch lazy rolling delta)
  add_test(NAME cuda.device.${p} COMMAND cuda_device_tests --gtest_filter=CudaDevice.*)
  set_tests_properties(cuda.device.${p} PROPERTIES TIMEOUT 300 ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p}")
endforeach()
add_test(NAME cuda.device.rolling.4K COMMAND cuda_device_tests --gtest_filter=CudaDevice.*)
set_tests_properties(cuda.device.rolling.4K PROPERTIES TIMEOUT 300
  ENVIRONMENT "${on_double};ADSM_PROTOCOL=rolling;ADSM_BLOCK_SIZE=4K;ADSM_ROLLING_SIZE=2")
# The cuda device finds writes by faults (its link outpaces the kernel's
# tracking); the kernel's tracking still works there when asked for.
add_test(NAME cuda.device.delta.uffd COMMAND cuda_device_tests --gtest_filter=CudaDevice.*)
set_tests_properties(cuda.device.delta.uffd PROPERTIES TIMEOUT 300
  ENVIRONMENT "${on_double};ADSM_PROTOCOL=delta;ADSM_DIRTY_TRACKING=uffd")
add_test(NAME cuda.device.eager COMMAND cuda_device_tests --gtest_filter=CudaDevice.*)
set_tests_properties(cuda.device.eager PROPERTIES TIMEOUT 300 ENVIRONMENT "${on_double};ADSM_CUDA_PIN=eager")
# Pages of a large first use made by several threads before pinning.
foreach(p batch lazy rolling delta)
  add_test(NAME cuda.device.${p}.pin_threads COMMAND cuda_device_tests --gtest_filter=CudaDevice.*)
  set_tests_properties(cuda.device.${p}.pin_threads PROPERTIES TIMEOUT 300
    ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p};ADSM_CUDA_PIN_THREADS=4")
endforeach()
add_test(NAME cuda.device.two_gpus COMMAND cuda_device_tests --gtest_filter=CudaTwoGpus.*)
# (With two GPUs, the starts alone fail call by call: the allocation's and
# the kernel call's runs are the longest, and one GPU has them.)
add_test(NAME cuda.device.two_gpus.failed_start COMMAND cuda_device_tests --gtest_filter=CudaDeviceStart.*Start*)
add_test(NAME cuda.device.two_gpus.no_peer COMMAND cuda_device_tests --gtest_filter=CudaTwoGpusNoPeer.*)
set_tests_properties(cuda.device.two_gpus cuda.device.two_gpus.failed_start PROPERTIES TIMEOUT 120
  ENVIRONMENT "${on_double};ADSM_DEVICE=cuda,cuda;FAKE_CUDA_DEVICES=2")
set_tests_properties(cuda.device.two_gpus.no_peer PROPERTIES TIMEOUT 120
  ENVIRONMENT "${on_double};ADSM_DEVICE=cuda,cuda;FAKE_CUDA_DEVICES=2;FAKE_CUDA_NO_PEER=1")
add_test(NAME cuda.device.fault COMMAND cuda_device_tests --gtest_filter=CudaDeviceFault.*)
add_test(NAME cuda.device.copy_fault COMMAND cuda_device_tests --gtest_filter=CudaDeviceCopyFault.*)
add_test(NAME cuda.device.failed_start COMMAND cuda_device_tests --gtest_filter=CudaDeviceStart.*)
add_test(NAME cuda.device.moved_window COMMAND cuda_device_tests --gtest_filter=CudaDeviceMoved.*)
set_tests_properties(cuda.device.fault cuda.device.copy_fault cuda.device.failed_start cuda.device.moved_window PROPERTIES TIMEOUT 120 ENVIRONMENT "${on_double}")
# (A start failed at each driver call in turn: a process each, 7 s alone, up
# to four times that beside the suite's heaviest tests on 2 cores.)
set_tests_properties(cuda.device.failed_start PROPERTIES TIMEOUT 300)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/broken_driver/libcuda.so.1 "not a shared library\n")
add_test(NAME cuda.no_driver COMMAND cuda_device_tests --gtest_filter=CudaNoDriver.*)
set_tests_properties(cuda.no_driver PROPERTIES TIMEOUT 60
  ENVIRONMENT "ADSM_DEVICE=cuda;LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/broken_driver")

# The API tests on the double (under ADSM_OTHER_DEVICE_API_PROTOCOLS,
# tests/CMakeLists.txt says why).  Left out: host-function
# launches (refused on cuda), a faulting kernel (it ends the context for the
# tests after it: cuda.device.fault has it), and the stress tests (a million
# regions are 4 GiB of device pages; each of 100k alloc/free cycles maps and
# unmaps a 2 MiB granule of the double's), and the signal-handler test (each of its
# thousands of kernels is a process of the double's; sim runs it in every protocol).
set(api_on_cuda "-KernelsTest.CallByName:ErrorsTest.KernelCrashIsReportedAtSyncAndTheProgramGoesOn:StressTest.*:SignalFaultsTest.*")
foreach(p ${ADSM_OTHER_DEVICE_API_PROTOCOLS})
  add_test(NAME api.cuda.${p} COMMAND api_tests --gtest_filter=${api_on_cuda})
  set_tests_properties(api.cuda.${p} PROPERTIES TIMEOUT 600 ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p}")
endforeach()

# The CUDA example program itself on the double, in every protocol: its
# kernels as host functions (gpu_example_kernels_host, made in
# levelzero_device_tests.cmake), preloaded for the double to find by name.
if(TARGET cuda_example AND NOT ADSM_SANITIZE)  # a preloaded library would come before the sanitizer runtime
  set(example_module ${CMAKE_CURRENT_BINARY_DIR}/cuda_kernels.double)
  file(WRITE ${example_module} "fake-module:scale:8,4,4;sum_list:8,8")
  foreach(p batch lazy rolling delta)
    add_test(NAME example.cuda.double.${p} COMMAND cuda_example ${example_module})
    set_tests_properties(example.cuda.double.${p} PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION "cuda example: ok"
      ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p};LD_PRELOAD=$<TARGET_FILE:gpu_example_kernels_host>")
  endforeach()
endif()

# The protocols' model-based test on the double: every byte the kernels
# read and write travels to and from separate device memory.
set(seed 200)
foreach(cfg "batch|256K|auto" "lazy|256K|auto" "rolling|64K|auto" "rolling|4K|auto" "delta|64K|auto" "delta|1M|auto"
            "delta|64K|uffd")
  if(ADSM_SANITIZE AND NOT cfg MATCHES "^(rolling.64K|delta.64K.uffd)")
    math(EXPR seed "${seed} + 1")
    continue()
  endif()
  string(REPLACE "|" ";" parts "${cfg}")
  list(GET parts 0 p)
  list(GET parts 1 bs)
  list(GET parts 2 tr)
  set(name model.cuda.${p}.${bs})
  if(NOT tr STREQUAL "auto")
    set(name ${name}.${tr})
  endif()
  # 4 KiB blocks cost most there (each evicted block is a copy of the
  # double's): half the phases, 15 s of the 30 a run took.
  set(phases 150)
  if(bs STREQUAL "4K")
    set(phases 75)
  endif()
  add_test(NAME ${name} COMMAND protocol_tests --gtest_filter=ModelTest.*)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT
    "${on_double};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=${bs};ADSM_ROLLING_SIZE=2;ADSM_MODEL_SEED=${seed};ADSM_DIRTY_TRACKING=${tr};ADSM_MODEL_PHASES=${phases}")
  math(EXPR seed "${seed} + 1")
endforeach()

# The protocols' fresh-memory and edge tests on the double, in every
# protocol and tracker (the mirror pinned, as on a GPU).
protocol_suites_on_double(cuda "${on_double}" "batch|256K|auto" "lazy|256K|mprotect" "lazy|256K|uffd"
  "rolling|64K|mprotect" "rolling|64K|uffd" "delta|64K|mprotect" "delta|64K|uffd")

# One GPU too small for the objects: they share granules (objects are
# page-aligned on one GPU) and are evicted in turn.  12 MiB holds any
# call's two objects (up to 4 MiB each, three granules across boundaries).
foreach(p batch rolling)
  if(ADSM_SANITIZE AND p STREQUAL "batch")
    math(EXPR seed "${seed} + 1")
    continue()
  endif()
  add_test(NAME model.cuda.evicting.${p}.64K COMMAND protocol_tests --gtest_filter=ModelTest.*)
  set_tests_properties(model.cuda.evicting.${p}.64K PROPERTIES TIMEOUT 300 ENVIRONMENT
    "${on_double};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=64K;ADSM_MODEL_SEED=${seed};FAKE_CUDA_MEMORY=12582912;ADSM_MODEL_OBJECTS=32;ADSM_MODEL_NAMED_CALLS=1;${ADSM_EVICTING_PHASES}")
  math(EXPR seed "${seed} + 1")
endforeach()

# Two GPUs of one address space (the double's FAKE_CUDA_DEVICES=2): one
# window whose granules are each one GPU's, objects handed over between
# them or reached over peer mappings, modules loaded in both contexts.
set(on_two_gpus "ADSM_DEVICE=cuda,cuda;FAKE_CUDA_DEVICES=2;LD_LIBRARY_PATH=${doubles_dir};FAKE_CUDA_MEMORY=268435456")
foreach(p batch lazy rolling delta)
  add_test(NAME api.cuda2.${p} COMMAND api_tests --gtest_filter=DevicesTest.*:PlacementTest.*:DeviceMemoryTest.*)
  set_tests_properties(api.cuda2.${p} PROPERTIES TIMEOUT 300 ENVIRONMENT "${on_two_gpus};ADSM_PROTOCOL=${p}")
endforeach()
# The model-based test moving objects between the GPUs; and with GPUs too
# small for the objects, evicting them in turn (each object whole granules,
# so that an eviction frees what the next object needs).
# (The sanitizer build runs two of them: the back-end's part is the same.)
foreach(cfg "batch|256K|auto|" "lazy|256K|uffd|" "rolling|64K|mprotect|" "delta|64K|uffd|"
            "lazy|64K|auto|evicting" "rolling|64K|mprotect|evicting" "delta|4K|mprotect|evicting")
  if(ADSM_SANITIZE AND NOT cfg MATCHES "^(lazy.256K|rolling.64K.mprotect.evicting)")
    continue()
  endif()
  string(REPLACE "|" ";" parts "${cfg}")
  list(GET parts 0 p)
  list(GET parts 1 bs)
  list(GET parts 2 tr)
  list(GET parts 3 kind)
  set(env "${on_two_gpus};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=${bs};ADSM_DIRTY_TRACKING=${tr};ADSM_MODEL_SEED=${seed}")
  set(name model.cuda2.${p}.${bs}.${tr})
  if(kind)
    set(name model.cuda2.${kind}.${p}.${bs}.${tr})
    set(env "${env};FAKE_CUDA_MEMORY=8388608;ADSM_MODEL_OBJECTS=16;ADSM_MODEL_NAMED_CALLS=1;${ADSM_EVICTING_PHASES}")
  endif()
  add_test(NAME ${name} COMMAND protocol_tests --gtest_filter=ModelTest.*)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${env}")
  math(EXPR seed "${seed} + 1")
endforeach()

# Objects four times what the GPU holds, evicted to their host copies and
# back (a host copy once went with its device memory).  Left out: what the
# cuda back-end refuses (host-resident and split objects, checked by
# PlacementTest), and a test that fills the device to the page with four
# objects, which on a GPU straddle its 2 MiB granules.
add_test(NAME oversubscription.cuda COMMAND oversubscription_tests
  --gtest_filter=-*SpillNext*:*Replicated*:*SpillSplit*:*PrefersTheHost*)
set_tests_properties(oversubscription.cuda PROPERTIES TIMEOUT 300
  ENVIRONMENT "ADSM_DEVICE=cuda;LD_LIBRARY_PATH=${doubles_dir};FAKE_CUDA_MEMORY=33554432")

# I/O on shared memory through the interposers (not in the sanitizer
# build, which takes malloc from AddressSanitizer), in the protocols that
# send whole blocks read from a file straight to the device.
if(NOT ADSM_SANITIZE)
  adsm_test(cuda_io_tests cuda_io_test.cpp)
  target_link_libraries(cuda_io_tests PRIVATE adsm_interpose)
  add_dependencies(cuda_io_tests fake_cuda)
  foreach(p rolling delta)
    add_test(NAME cuda.io.${p} COMMAND cuda_io_tests)
    set_tests_properties(cuda.io.${p} PROPERTIES TIMEOUT 120
      ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p}")
  endforeach()
endif()

# On a real GPU only (scripts/gpu-check): kernels nvcc built.  (Not in the
# sanitizer build, which no GPU runs: nvcc took half a minute of it.)
if(ADSM_CUDA_FATBIN AND NOT ADSM_SANITIZE)
  add_executable(cuda_gpu_tests cuda_gpu_test.cpp)
  target_link_libraries(cuda_gpu_tests PRIVATE adsm GTest::gtest GTest::gtest_main)
  # An unmodified CUDA program, with the shared and the static runtime, and
  # with the static one and a default stream per thread (its copies and
  # fills reach the driver's _ptsz entry points, where stream 0 means the
  # calling thread's stream).
  foreach(rt shared static static_ptsz)
    set(flags -cudart ${rt})
    if(rt STREQUAL "static_ptsz")
      set(flags -cudart static --default-stream per-thread)
    endif()
    add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/cuda_program_${rt}
      COMMAND ${ADSM_NVCC} -O2 ${flags} -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
              -o ${CMAKE_CURRENT_BINARY_DIR}/cuda_program_${rt} ${CMAKE_CURRENT_SOURCE_DIR}/cuda_program.cu
      DEPENDS cuda_program.cu
      COMMENT "nvcc: cuda_program_${rt}")
    list(APPEND cuda_programs ${CMAKE_CURRENT_BINARY_DIR}/cuda_program_${rt})
  endforeach()
  add_custom_target(cuda_programs ALL DEPENDS ${cuda_programs})
endif()
