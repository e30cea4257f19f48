# The levelzero back-end on the Level Zero double (a discrete device), in
# every protocol; included by CMakeLists.txt in the normal and the sanitizer
# build.
# The GPU examples' kernels as host functions: what the double runs for a
# SPIR-V module's kernels (by name), and for the example's own.
add_library(gpu_example_kernels_host SHARED ${PROJECT_SOURCE_DIR}/tests/examples/gpu_kernels_host.c)
adsm_test(levelzero_device_tests levelzero_device_test.cpp)
target_link_libraries(levelzero_device_tests PRIVATE gpu_example_kernels_host)
target_link_options(levelzero_device_tests PRIVATE -Wl,--no-as-needed)
adsm_audit_fault_handler(levelzero_device_tests)
add_dependencies(levelzero_device_tests fake_ze start_failure_probe)
target_compile_definitions(levelzero_device_tests PRIVATE START_FAILURE_PROBE="$<TARGET_FILE:start_failure_probe>")
if(ADSM_SPIRV_MODULE)
  add_dependencies(levelzero_device_tests levelzero_kernels)
  target_compile_definitions(levelzero_device_tests PRIVATE ADSM_SPIRV_MODULE="${ADSM_SPIRV_MODULE}")
endif()
set(on_ze_double "ADSM_DEVICE=levelzero;LD_LIBRARY_PATH=${doubles_dir};FAKE_ZE_MEMORY=268435456")
foreach(p batch lazy rolling delta)
  add_test(NAME levelzero.device.${p} COMMAND levelzero_device_tests --gtest_filter=LevelZeroDevice.*)
  set_tests_properties(levelzero.device.${p} PROPERTIES TIMEOUT 300 ENVIRONMENT "${on_ze_double};ADSM_PROTOCOL=${p}")
endforeach()
# (Without the 24 MiB asynchronous-copy test: 6144 blocks of 4 KiB faulted
# and flushed one by one four times took 18 s of the run's 21 in CI, and
# most of its 34 s sanitized; rolling runs it with its own blocks above.)
add_test(NAME levelzero.device.rolling.4K COMMAND levelzero_device_tests
  --gtest_filter=LevelZeroDevice.*:-LevelZeroDevice.AsynchronousCopiesCarryEveryByte)
set_tests_properties(levelzero.device.rolling.4K PROPERTIES TIMEOUT 300
  ENVIRONMENT "${on_ze_double};ADSM_PROTOCOL=rolling;ADSM_BLOCK_SIZE=4K;ADSM_ROLLING_SIZE=2")
add_test(NAME levelzero.device.fault COMMAND levelzero_device_tests --gtest_filter=LevelZeroDeviceFault.*)
add_test(NAME levelzero.device.copy_fault COMMAND levelzero_device_tests --gtest_filter=LevelZeroDeviceCopyFault.*)
add_test(NAME levelzero.device.failed_start COMMAND levelzero_device_tests --gtest_filter=LevelZeroDeviceStart.*)
add_test(NAME levelzero.device.moved_window COMMAND levelzero_device_tests --gtest_filter=LevelZeroDeviceMoved.*)
set_tests_properties(levelzero.device.fault levelzero.device.copy_fault levelzero.device.failed_start levelzero.device.moved_window PROPERTIES TIMEOUT 120
  ENVIRONMENT "${on_ze_double}")
# (A start failed at each driver call in turn, a process each: as cuda's, up
# to four times slower beside the suite's heaviest tests on 2 cores.)
set_tests_properties(levelzero.device.failed_start PROPERTIES TIMEOUT 300)
add_test(NAME levelzero.device.two_gpus COMMAND levelzero_device_tests --gtest_filter=LevelZeroTwoGpus.*)
# (With two GPUs, the starts alone fail call by call, as on cuda.)
add_test(NAME levelzero.device.two_gpus.failed_start COMMAND levelzero_device_tests
  --gtest_filter=LevelZeroDeviceStart.*Start*)
add_test(NAME levelzero.device.two_gpus.no_peer COMMAND levelzero_device_tests --gtest_filter=LevelZeroTwoGpusNoPeer.*)
set_tests_properties(levelzero.device.two_gpus levelzero.device.two_gpus.failed_start PROPERTIES TIMEOUT 120
  ENVIRONMENT "${on_ze_double};ADSM_DEVICE=levelzero,levelzero;FAKE_ZE_DEVICES=2")
set_tests_properties(levelzero.device.two_gpus.no_peer PROPERTIES TIMEOUT 120
  ENVIRONMENT "${on_ze_double};ADSM_DEVICE=levelzero,levelzero;FAKE_ZE_DEVICES=2;FAKE_ZE_NO_PEER=1")
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/broken_loader/libze_loader.so.1 "not a shared library\n")
add_test(NAME levelzero.no_loader COMMAND levelzero_device_tests --gtest_filter=LevelZeroNoDriver.*)
set_tests_properties(levelzero.no_loader PROPERTIES TIMEOUT 60
  ENVIRONMENT "ADSM_DEVICE=levelzero;LD_LIBRARY_PATH=${CMAKE_CURRENT_BINARY_DIR}/broken_loader")

# The API tests on the double, as on cuda, with what cannot run on a
# GPU back-end left out as on cuda (cuda_device_tests.cmake says why).
set(api_on_ze "-KernelsTest.CallByName:ErrorsTest.KernelCrashIsReportedAtSyncAndTheProgramGoesOn:StressTest.*:SignalFaultsTest.*")
foreach(p ${ADSM_OTHER_DEVICE_API_PROTOCOLS})
  add_test(NAME api.levelzero.${p} COMMAND api_tests --gtest_filter=${api_on_ze})
  set_tests_properties(api.levelzero.${p} PROPERTIES TIMEOUT 600 ENVIRONMENT "${on_ze_double};ADSM_PROTOCOL=${p}")
endforeach()

# The protocols' model-based test on the double: every byte the kernels
# read and write travels to and from separate device memory.
set(seed 300)
foreach(cfg "batch|256K" "lazy|256K" "rolling|64K" "rolling|4K" "delta|64K" "delta|1M")
  if(ADSM_SANITIZE AND NOT cfg MATCHES "^(rolling.64K|delta.64K)")
    math(EXPR seed "${seed} + 1")
    continue()
  endif()
  string(REPLACE "|" ";" parts "${cfg}")
  list(GET parts 0 p)
  list(GET parts 1 bs)
  add_test(NAME model.levelzero.${p}.${bs} COMMAND protocol_tests --gtest_filter=ModelTest.*)
  set_tests_properties(model.levelzero.${p}.${bs} PROPERTIES TIMEOUT 300 ENVIRONMENT
    "${on_ze_double};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=${bs};ADSM_ROLLING_SIZE=2;ADSM_MODEL_SEED=${seed}")
  math(EXPR seed "${seed} + 1")
endforeach()

# The protocols' fresh-memory and edge tests on the double, as on cuda's,
# in each protocol.
protocol_suites_on_double(levelzero "${on_ze_double}" "batch|256K|auto" "lazy|256K|mprotect" "rolling|64K|mprotect"
  "delta|64K|uffd")

# Two GPUs of one context (FAKE_ZE_DEVICES=2), as cuda2 in
# cuda_device_tests.cmake: the device, placement and device-memory suites,
# and the model-based test moving objects between the GPUs and, with GPUs
# too small for the objects, evicting them in turn.
set(on_two_ze "ADSM_DEVICE=levelzero,levelzero;FAKE_ZE_DEVICES=2;LD_LIBRARY_PATH=${doubles_dir};FAKE_ZE_MEMORY=268435456")
foreach(p batch lazy rolling delta)
  add_test(NAME api.levelzero2.${p} COMMAND api_tests --gtest_filter=DevicesTest.*:PlacementTest.*:DeviceMemoryTest.*)
  set_tests_properties(api.levelzero2.${p} PROPERTIES TIMEOUT 300 ENVIRONMENT "${on_two_ze};ADSM_PROTOCOL=${p}")
endforeach()
foreach(cfg "batch|256K|auto|" "delta|64K|uffd|" "lazy|64K|auto|evicting" "rolling|64K|mprotect|evicting")
  if(ADSM_SANITIZE AND NOT cfg MATCHES "^rolling.64K.mprotect.evicting")
    continue()
  endif()
  string(REPLACE "|" ";" parts "${cfg}")
  list(GET parts 0 p)
  list(GET parts 1 bs)
  list(GET parts 2 tr)
  list(GET parts 3 kind)
  set(env "${on_two_ze};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=${bs};ADSM_DIRTY_TRACKING=${tr};ADSM_MODEL_SEED=${seed}")
  set(name model.levelzero2.${p}.${bs}.${tr})
  if(kind)
    set(name model.levelzero2.${kind}.${p}.${bs}.${tr})
    set(env "${env};FAKE_ZE_MEMORY=8388608;ADSM_MODEL_OBJECTS=16;ADSM_MODEL_NAMED_CALLS=1;${ADSM_EVICTING_PHASES}")
  endif()
  add_test(NAME ${name} COMMAND protocol_tests --gtest_filter=ModelTest.*)
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${env}")
  math(EXPR seed "${seed} + 1")
endforeach()

# One GPU too small for the objects, as model.cuda.evicting.*.
add_test(NAME model.levelzero.evicting.delta.64K COMMAND protocol_tests --gtest_filter=ModelTest.*)
set_tests_properties(model.levelzero.evicting.delta.64K PROPERTIES TIMEOUT 300 ENVIRONMENT
  "${on_ze_double};ADSM_PROTOCOL=delta;ADSM_BLOCK_SIZE=64K;ADSM_MODEL_SEED=${seed};FAKE_ZE_MEMORY=12582912;ADSM_MODEL_OBJECTS=32;ADSM_MODEL_NAMED_CALLS=1;${ADSM_EVICTING_PHASES}")
math(EXPR seed "${seed} + 1")

# The Level Zero example program itself on the double, in every protocol:
# its kernels as host functions, preloaded for the double to find by name.
if(NOT ADSM_SANITIZE)  # a preloaded library would come before the sanitizer runtime
  set(ze_example_module ${CMAKE_CURRENT_BINARY_DIR}/levelzero_kernels.double)
  file(WRITE ${ze_example_module} "scale:8,4,4;sum_list:8,8")
  foreach(p batch lazy rolling delta)
    add_test(NAME example.levelzero.double.${p} COMMAND levelzero_example ${ze_example_module})
    set_tests_properties(example.levelzero.double.${p} PROPERTIES TIMEOUT 300
      PASS_REGULAR_EXPRESSION "levelzero example: ok"
      ENVIRONMENT "${on_ze_double};ADSM_PROTOCOL=${p};LD_PRELOAD=$<TARGET_FILE:gpu_example_kernels_host>")
  endforeach()
  # And with the SPIR-V that clang and llvm-spirv made of levelzero_kernels.cl:
  # the parameter sizes the runtime reads from it must agree with the
  # program's.
  if(ADSM_SPIRV_MODULE)
    foreach(p batch delta)
      add_test(NAME example.levelzero.double.spirv.${p} COMMAND levelzero_example ${ADSM_SPIRV_MODULE})
      set_tests_properties(example.levelzero.double.spirv.${p} PROPERTIES TIMEOUT 300
        PASS_REGULAR_EXPRESSION "levelzero example: ok"
        ENVIRONMENT "${on_ze_double};ADSM_PROTOCOL=${p};LD_PRELOAD=$<TARGET_FILE:gpu_example_kernels_host>")
    endforeach()
  endif()
endif()

# Objects four times what the GPU holds, evicted to their host copies and
# back, as oversubscription.cuda (cuda_device_tests.cmake says what is left
# out and why).
if(NOT ADSM_SANITIZE)
  add_test(NAME oversubscription.levelzero COMMAND oversubscription_tests
    --gtest_filter=-*SpillNext*:*Replicated*:*SpillSplit*:*PrefersTheHost*)
  set_tests_properties(oversubscription.levelzero PROPERTIES TIMEOUT 300
    ENVIRONMENT "ADSM_DEVICE=levelzero;LD_LIBRARY_PATH=${doubles_dir};FAKE_ZE_MEMORY=33554432")
endif()
