# adsm-device-server hosting cuda and levelzero on the drivers' doubles:
# each client's device in a process of its own, its memory staged for RMA
# and pushed to (pulled from) the GPU, its kernels from --modules or from
# modules of the client's own.  The doubles run GPU code as host functions
# found by symbol: the kernels libraries are preloaded into the server
# alone, and the module files name their symbols.
set(remote_kernels_module ${CMAKE_CURRENT_BINARY_DIR}/remote_kernels.double)
file(WRITE ${remote_kernels_module}
  "fake-module:remote.add=remote_add:8,8,4;remote.crash=remote_crash:;remote.nap=remote_nap:4,8;add_one=remote_add_one:8,4")
set(model_kernels_module ${CMAKE_CURRENT_BINARY_DIR}/model_kernels.double)
file(WRITE ${model_kernels_module}
  "fake-module:model.transform=adsm_test_model_transform:8,8,8,1,1;model.checksum=adsm_test_model_checksum:8,8,8")

# Level Zero's driver says how many parameters a kernel has, not their
# sizes (of a module that is not SPIR-V, as the double's are): the client
# states them, for kernels it registered by name and for its own modules'.
set(on_ze "LD_LIBRARY_PATH=${doubles_dir};FAKE_ZE_MEMORY=1073741824")
set(serve_ze "REMOTE_TEST_SERVER_ARGS=--device levelzero --modules ${remote_kernels_module};REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:remote_test_kernels>")
add_test(NAME remote.server.levelzero COMMAND remote_server_tests --gtest_filter=*Staged*)
# (A faulting kernel ends the client's context: that test has a process of
# its own.)
add_test(NAME remote.client.levelzero COMMAND remote_client_tests --gtest_filter=-*Heartbeat*:*MidTransfer*:*KernelErrors*:*RefusedLaunch*)
add_test(NAME remote.client.levelzero.fault COMMAND remote_client_tests --gtest_filter=*KernelErrors*)
set_tests_properties(remote.server.levelzero remote.client.levelzero remote.client.levelzero.fault PROPERTIES
  TIMEOUT 180 ENVIRONMENT "${on_ze};${serve_ze}")
add_test(NAME model.remote.levelzero.rolling.64K.uffd
  COMMAND ${PROJECT_SOURCE_DIR}/tests/remote/with_server.sh $<TARGET_FILE:adsm-device-server>
          $<TARGET_FILE:remote_model_kernels> $<TARGET_FILE:protocol_tests> --gtest_filter=ModelTest.*)
set_tests_properties(model.remote.levelzero.rolling.64K.uffd PROPERTIES TIMEOUT 300 ENVIRONMENT
  "${on_ze};ADSM_PROTOCOL=rolling;ADSM_BLOCK_SIZE=64K;ADSM_DIRTY_TRACKING=uffd;REMOTE_TEST_SERVER_ARGS=--device levelzero --modules ${model_kernels_module};REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:remote_model_kernels>")
# The Level Zero example, unchanged, on a remote GPU: its module goes to
# the server, its kernels' sizes as it declares them.
set(remote_ze_example_module ${CMAKE_CURRENT_BINARY_DIR}/levelzero_kernels_remote.double)
file(WRITE ${remote_ze_example_module} "fake-module:scale:8,4,4;sum_list:8,8")
add_test(NAME example.levelzero.remote.delta
  COMMAND ${PROJECT_SOURCE_DIR}/tests/remote/with_server.sh $<TARGET_FILE:adsm-device-server>
          $<TARGET_FILE:remote_test_kernels> $<TARGET_FILE:levelzero_example> ${remote_ze_example_module})
set_tests_properties(example.levelzero.remote.delta PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION
  "on remote; levelzero example: ok" ENVIRONMENT
  "${on_ze};ADSM_PROTOCOL=delta;REMOTE_TEST_SERVER_ARGS=--device levelzero;REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:gpu_example_kernels_host>")

if(NOT TARGET fake_cuda)
  return()
endif()
set(on_double "LD_LIBRARY_PATH=${doubles_dir};FAKE_CUDA_MEMORY=1073741824")

# A faulting kernel ends the client's CUDA context: that test has a process
# of its own.
set(serve_cuda "REMOTE_TEST_SERVER_ARGS=--device cuda --modules ${remote_kernels_module};REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:remote_test_kernels>")
add_test(NAME remote.client.cuda COMMAND remote_client_tests --gtest_filter=-*Heartbeat*:*MidTransfer*:*KernelErrors*:*RefusedLaunch*)
add_test(NAME remote.client.cuda.fault COMMAND remote_client_tests --gtest_filter=*KernelErrors*)
set_tests_properties(remote.client.cuda remote.client.cuda.fault PROPERTIES TIMEOUT 180 ENVIRONMENT
  "${on_double};${serve_cuda}")
# The server's GPU driver fails its second launch, one the client posted.
add_test(NAME remote.client.cuda.refused_launch COMMAND remote_client_tests --gtest_filter=*RefusedLaunch*)
set_tests_properties(remote.client.cuda.refused_launch PROPERTIES TIMEOUT 120 ENVIRONMENT
  "${on_double};${serve_cuda};FAKE_CUDA_FAIL=cuLaunchKernel:2")
foreach(cfg "lazy|256K|uffd" "delta|64K|mprotect")
  string(REPLACE "|" ";" parts "${cfg}")
  list(GET parts 0 p)
  list(GET parts 1 bs)
  list(GET parts 2 tr)
  add_test(NAME model.remote.cuda.${p}.${bs}.${tr}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/remote/with_server.sh $<TARGET_FILE:adsm-device-server>
            $<TARGET_FILE:remote_model_kernels> $<TARGET_FILE:protocol_tests> --gtest_filter=ModelTest.*)
  set_tests_properties(model.remote.cuda.${p}.${bs}.${tr} PROPERTIES TIMEOUT 300 ENVIRONMENT
    "${on_double};ADSM_PROTOCOL=${p};ADSM_BLOCK_SIZE=${bs};ADSM_DIRTY_TRACKING=${tr};REMOTE_TEST_SERVER_ARGS=--device cuda --modules ${model_kernels_module};REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:remote_model_kernels>")
endforeach()
add_test(NAME remote.server.cuda COMMAND remote_server_tests --gtest_filter=*Staged*)
set_tests_properties(remote.server.cuda PROPERTIES TIMEOUT 120 ENVIRONMENT "${on_double};${serve_cuda}")

# A CUDA program's own module on a remote GPU: the CUDA example, unchanged,
# on ADSM_DEVICE=remote; its image (the double's, naming the example's
# kernels built for the host) goes to the server, which loads it.
if(TARGET cuda_example)
  set(remote_example_module ${CMAKE_CURRENT_BINARY_DIR}/cuda_kernels_remote.double)
  file(WRITE ${remote_example_module} "fake-module:scale:8,4,4;sum_list:8,8")
  foreach(p lazy rolling)
    add_test(NAME example.cuda.remote.${p}
      COMMAND ${PROJECT_SOURCE_DIR}/tests/remote/with_server.sh $<TARGET_FILE:adsm-device-server>
              $<TARGET_FILE:remote_test_kernels> $<TARGET_FILE:cuda_example> ${remote_example_module})
    set_tests_properties(example.cuda.remote.${p} PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION "on remote; cuda example: ok"
      ENVIRONMENT "${on_double};ADSM_PROTOCOL=${p};REMOTE_TEST_SERVER_ARGS=--device cuda;REMOTE_TEST_SERVER_PRELOAD=$<TARGET_FILE:gpu_example_kernels_host>")
  endforeach()
endif()
