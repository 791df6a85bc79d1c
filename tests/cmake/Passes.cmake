# The other builds' passes as tests of this build's one CTest run (issue 37: CTest schedules
# everything). scripts/test configures the other build directories and names them here; each
# pass is then a test like any other, so CTest fits the sanitizer tests and the container test
# into the time the long Umami, cluster and partition chains spend waiting on the faults they
# cause, instead of running them one after another at the end.
#
#   CORE_PASS_ASAN_DIR    a configured -DCORE_SANITIZE=ON build: "sanitizer build" (its ninja,
#                         fixture pass_asan) then "sanitizer tests" (its unit and integration
#                         tests, one nested ctest)
#   CORE_PASS_FUZZ_DIR    a configured -DCORE_FUZZ=ON build: "fuzz targets" builds and mutates
#   CORE_PASS_IMAGES      ON: "container images" (tests/container/images.sh, fixture
#                         pass_images), which container_deployment then requires
#
# The builds run in one slot each. The images at a lower priority (nice 10), the fuzz targets,
# which nothing waits for, at the lowest (19): they take the CPU the tests leave. At 19 the
# images finished only after the other tests had (82-minute run of c86fdd2: 46 minutes of
# leftover CPU). The sanitizer build runs at the tests' own priority: its tests (8 minutes)
# wait for it, and at nice 10 it ended 40 minutes into the CTest run of 6478eb9 (2026-12-07),
# so the sanitizer tests were the run's last minutes.
include_guard(GLOBAL)

set(CORE_PASS_ASAN_DIR "" CACHE PATH "a sanitizer build whose build and tests are tests here")
set(CORE_PASS_ASAN_NATS_SERVER "" CACHE FILEPATH
  "the nats-server the sanitizer tests run on (empty: NATS_SERVER_BIN, else the default)")
set(CORE_PASS_FUZZ_DIR "" CACHE PATH "a fuzz build whose build and run is a test here")
option(CORE_PASS_IMAGES "the container test's images are built by a test here" OFF)

cmake_host_system_information(RESULT _pass_cores QUERY NUMBER_OF_LOGICAL_CORES)

# _core_pass(NAME name COMMAND ... [FIXTURE f] [PROPERTIES ...]): a build pass in one slot,
# started first (COST), alone in its own lock so that no two runs of it overlap.
function(_core_pass)
  cmake_parse_arguments(A "" "NAME;FIXTURE" "COMMAND;PROPERTIES" ${ARGN})
  add_test(NAME ${A_NAME} COMMAND ${A_COMMAND})
  set_tests_properties(${A_NAME} PROPERTIES LABELS pass PROCESSORS 1 COST 100000 TIMEOUT 5400
    ${A_PROPERTIES})
  if(A_FIXTURE)
    set_tests_properties(${A_NAME} PROPERTIES FIXTURES_SETUP ${A_FIXTURE})
  endif()
endfunction()

if(CORE_PASS_ASAN_DIR)
  _core_pass(NAME "sanitizer build" FIXTURE pass_asan
    COMMAND ninja -C ${CORE_PASS_ASAN_DIR} -j${_pass_cores})
  # The nested run has the sanitizer build's own kinds and slots; here it holds 3 slots in 8
  # (no more: a test that needs many at once starves), and its -j lets it use more while the
  # others wait on their faults. The Umami tests
  # and the timing tests run in the plain build only (a sanitizer's slowdown is not what their
  # waits and answers measure).
  math(EXPR _pass_asan_jobs "3 * ${_pass_cores}")
  math(EXPR _pass_asan_slots "3 * ${CORE_TEST_JOBS} / 8")
  add_test(NAME "sanitizer tests" COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${CORE_PASS_ASAN_DIR}
    -LE "umami|timing" --output-on-failure -j${_pass_asan_jobs} --timeout 900)
  set(_pass_asan_env
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  if(CORE_PASS_ASAN_NATS_SERVER)
    list(APPEND _pass_asan_env "NATS_SERVER_BIN=${CORE_PASS_ASAN_NATS_SERVER}")
  endif()
  set_tests_properties("sanitizer tests" PROPERTIES LABELS "pass;sanitizer"
    PROCESSORS ${_pass_asan_slots} COST 90000 TIMEOUT 5400 FIXTURES_REQUIRED pass_asan
    ENVIRONMENT "${_pass_asan_env}")
endif()

if(CORE_PASS_FUZZ_DIR)
  # Each fuzz_<name> mutates its corpus for CORE_FUZZ_SECONDS (tests/fuzz); a finding fails it
  # and leaves the input in <fuzz build>/tests/fuzz/artifacts.
  _core_pass(NAME "fuzz targets" COMMAND nice -n 19 sh -c
    "ninja -C \"$0\" -j2 fuzz_targets && ${CMAKE_CTEST_COMMAND} --test-dir \"$0\" -L fuzz --output-on-failure -j2"
    ${CORE_PASS_FUZZ_DIR})
endif()

if(CORE_PASS_IMAGES)
  _core_pass(NAME "container images" FIXTURE pass_images
    COMMAND nice -n 10 ${CORE_SOURCE_DIR}/tests/container/images.sh
    PROPERTIES ENVIRONMENT "IMAGE_TIMES=${CMAKE_BINARY_DIR}/images.times")
endif()
