# How CTest schedules every test (issue 37): one `ctest -j <CORE_TEST_JOBS>` over a build runs
# them all (scripts/test); nothing else orders them. Each test is registered through
# core_discover_tests() or core_add_test() with a KIND, and the kind alone says how it shares the
# machine:
#
#   kind          labels                 slots  lock       per nats-server  why
#   unit          unit                   2      -          no               short, CPU only
#   simulation    simulation             2      -          no               two threads
#   integration   integration            2      -          yes              a nats-server (and
#                                                                           PostgreSQL) each
#   timing        timing                 all    -          yes              loses answers by
#                                                                           SIGSTOP: alone
#   umami         umami                  3      umami      no               a real Umami: its
#                                                                           sends need the CPU
#   cluster_umami cluster;umami          2      cluster    no               three NATS nodes and
#                                                                           Umami: failover times
#   cluster       cluster                2      cluster_ctl no              three NATS nodes,
#                                                                           platformctl's faults
#   cluster_each  cluster                2      erasure    yes              erasure: what each
#                                                                           version keeps
#   partition     partition;umami        2      partition  no               namespaces with fixed
#                                                                           names: one at a time
#
# Slots are quarter cores: CORE_TEST_JOBS (default 4 x the machine's logical cores) is the
# number of slots. The machine is the limit, not the slots: a fresh-clone run has more CPU work
# (three builds, the images, the tests) than two cores do in the time, so the slots only keep
# the order. The Umami tests are the longest chain (one at a time, 20-odd tests): COST starts
# it first and it asks for 3 slots only, so it never waits for room. Charged 6 slots, it waited
# behind everything else: in a fresh-clone run of 46f18c9 (2026-12-07) not one Umami test had
# started after 22 minutes of tests, while the builds of the other passes, the partition and
# cluster chains and the integration tests took every slot that came free; a test that needs
# many slots at once starves while smaller ones fill each slot as it frees.
# The locks keep the tests that start a whole world one at a time: Umami tests among themselves;
# the failover tests on a cluster with Umami among themselves and with the container test
# (tests/container), whose failover times they share the machine with; platformctl's cluster
# tests among themselves; the erasure tests among themselves; the partition tests among
# themselves (their network namespaces have fixed names). Tests under different locks may run
# together: they mostly wait on the outages they cause. Until 2026-12-07 one lock held every
# cluster test and the container test: a chain of 26 minutes of one-at-a-time tests that
# began with the run and ended it (35.6 minutes into the fresh-clone run of 42b25c5, the last
# 10 on an idle machine); the erasure tests alone are 13 of them (each waits for the servers'
# own snapshots). COST then starts the longest chains first (erasure, the cluster chains, the
# partition chain, the simulation): a fresh build has no timings of an earlier run. (Until
# c86fdd2 the cluster and partition tests shared one lock, a chain of 43 minutes.)
#
# Per nats-server: with CORE_NATS_SERVERS ("name=path;name=path", scripts/test passes Debian
# 13's and the newest Debian's), a test of a kind marked "yes" is registered once per server,
# named "<test> @<name>", labelled nats-<name>, with NATS_SERVER_BIN set; without it, once, on
# the default server (tests/support/test_stack.h). CORE_INTEGRATION_NATS_SERVERS, when set,
# takes its place for the integration kind: scripts/test names the production line's there and
# runs the sanitizer pass's integration tests on Debian 13's, so each version runs them once
# (the third pass this replaces, plain on Debian 13's: 85 tests, 461 s of test time in the
# 64-minute fresh-clone run of bebf3eb).
include_guard(GLOBAL)

cmake_host_system_information(RESULT _core_cores QUERY NUMBER_OF_LOGICAL_CORES)
math(EXPR _core_slots "4 * ${_core_cores}")
set(CORE_TEST_JOBS ${_core_slots} CACHE STRING
  "ctest -j for this build: quarter-core slots (tests/cmake/CoreTests.cmake)")
set(CORE_NATS_SERVERS "" CACHE STRING
  "name=path;... of the nats-servers the integration tests run on, each (empty: the default)")
set(CORE_INTEGRATION_NATS_SERVERS "" CACHE STRING
  "name=path;... for the integration kind only (empty: CORE_NATS_SERVERS)")

# _core_kind(KIND): sets _labels, _props (a property list) and _per_nats in the caller.
macro(_core_kind kind)
  set(_per_nats FALSE)
  if("${kind}" STREQUAL "unit")
    set(_labels unit)
    set(_props PROCESSORS 2 TIMEOUT 300)
  elseif("${kind}" STREQUAL "simulation")
    set(_labels simulation)
    set(_props PROCESSORS 2 TIMEOUT 900 COST 2000)
  elseif("${kind}" STREQUAL "integration")
    set(_labels integration)
    set(_props PROCESSORS 2 TIMEOUT 300)
    set(_per_nats INTEGRATION)
  elseif("${kind}" STREQUAL "timing")
    set(_labels timing)
    set(_props PROCESSORS ${CORE_TEST_JOBS} TIMEOUT 300)
    set(_per_nats TRUE)
  elseif("${kind}" STREQUAL "umami")
    set(_labels umami)
    set(_props PROCESSORS 3 RESOURCE_LOCK umami TIMEOUT 900 COST 3000)
  elseif("${kind}" STREQUAL "cluster")
    set(_labels cluster)
    set(_props PROCESSORS 2 RESOURCE_LOCK cluster_ctl TIMEOUT 600 COST 2450)
  elseif("${kind}" STREQUAL "cluster_each")
    # A cluster test whose judgement depends on the server's own behaviour (erasure: what each
    # version leaves in its raft logs): on each nats-server, one at a time. The longest chain.
    set(_labels cluster)
    set(_props PROCESSORS 2 RESOURCE_LOCK erasure TIMEOUT 600 COST 2550)
    set(_per_nats TRUE)
  elseif("${kind}" STREQUAL "cluster_umami")
    set(_labels cluster umami)
    set(_props PROCESSORS 2 RESOURCE_LOCK cluster TIMEOUT 600 COST 2500)
  elseif("${kind}" STREQUAL "partition")
    set(_labels partition umami)
    set(_props PROCESSORS 2 RESOURCE_LOCK partition TIMEOUT 900 COST 2400 SKIP_RETURN_CODE 77)
  else()
    message(FATAL_ERROR "core tests: no kind '${kind}' (tests/cmake/CoreTests.cmake)")
  endif()
endmacro()

# _core_servers(OUT): "name=path" entries to register on, or one empty entry (the default).
function(_core_servers out per_nats)
  if(per_nats STREQUAL "INTEGRATION" AND CORE_INTEGRATION_NATS_SERVERS)
    set(${out} ${CORE_INTEGRATION_NATS_SERVERS} PARENT_SCOPE)
  elseif(per_nats AND CORE_NATS_SERVERS)
    set(${out} ${CORE_NATS_SERVERS} PARENT_SCOPE)
  else()
    set(${out} "-" PARENT_SCOPE)
  endif()
endfunction()

# core_discover_tests(TARGET KIND kind [TEST_SPEC spec]): the Catch test cases of TARGET (those
# TEST_SPEC selects, e.g. "[erasure]" or "~[erasure]"), as KIND says.
function(core_discover_tests target)
  cmake_parse_arguments(A "" "KIND;TEST_SPEC" "" ${ARGN})
  _core_kind(${A_KIND})
  _core_servers(servers ${_per_nats})
  foreach(server IN LISTS servers)
    set(suffix "")
    set(list_var ${target}_TESTS)
    if(A_TEST_SPEC)
      string(MAKE_C_IDENTIFIER "${A_TEST_SPEC}" spec_id)
      set(list_var ${target}${spec_id}_TESTS)
    endif()
    set(labels ${_labels})
    set(props ${_props})
    # Catch names its generated files by a hash of EXTRA_ARGS only: --name (the run's name in
    # Catch's output) makes each server's registration its own.
    set(extra --warn NoTests)
    if(NOT server STREQUAL "-")
      string(REGEX REPLACE "=.*" "" name "${server}")
      string(REGEX REPLACE "^[^=]*=" "" bin "${server}")
      set(suffix " @${name}")
      string(REPLACE "_TESTS" "_${name}_TESTS" list_var "${list_var}")
      list(APPEND labels nats-${name})
      list(APPEND props ENVIRONMENT NATS_SERVER_BIN=${bin})
      list(APPEND extra --name ${target}@${name})
    endif()
    set(spec "")
    if(A_TEST_SPEC)
      set(spec TEST_SPEC "${A_TEST_SPEC}")
    endif()
    catch_discover_tests(${target} ${spec} EXTRA_ARGS ${extra} TEST_SUFFIX "${suffix}"
      TEST_LIST ${list_var} PROPERTIES ${props})
    # Labels by a file CTest includes after Catch's: catch_discover_tests would flatten a list
    # value ("cluster;umami") into two words.
    set(file ${CMAKE_CURRENT_BINARY_DIR}/${list_var}_labels.cmake)
    file(WRITE ${file}
      "if(${list_var})\n"
      "  set_tests_properties(\${${list_var}} PROPERTIES LABELS \"${labels}\")\n"
      "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${file})
  endforeach()
endfunction()

# core_add_test(NAME name KIND kind COMMAND ... [LABELS extra...] [PROPERTIES ...]): one test
# that is no Catch test case (a script, a tool), as KIND says.
function(core_add_test)
  cmake_parse_arguments(A "" "NAME;KIND" "COMMAND;LABELS;PROPERTIES;ENVIRONMENT" ${ARGN})
  _core_kind(${A_KIND})
  _core_servers(servers ${_per_nats})
  foreach(server IN LISTS servers)
    set(test ${A_NAME})
    set(labels ${_labels} ${A_LABELS})
    set(env ${A_ENVIRONMENT})
    if(NOT server STREQUAL "-")
      string(REGEX REPLACE "=.*" "" name "${server}")
      string(REGEX REPLACE "^[^=]*=" "" bin "${server}")
      set(test "${A_NAME} @${name}")
      list(APPEND labels nats-${name})
      list(APPEND env NATS_SERVER_BIN=${bin})
    endif()
    add_test(NAME ${test} COMMAND ${A_COMMAND})
    set_tests_properties(${test} PROPERTIES ${_props} ${A_PROPERTIES} LABELS "${labels}")
    if(env)
      set_tests_properties(${test} PROPERTIES ENVIRONMENT "${env}")
    endif()
  endforeach()
endfunction()
