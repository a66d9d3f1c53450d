# Distributed check run by CTest: partition the challenge subset for NP ranks (block / random / Zoltan PHG), run
# `mpirun -np NP spartan-sdnn infer|train --partition ...` and require the run's own checks to pass:
# predicted (connectivity-1) volume == measured bytes sent, and equality with the single-rank result.
# Variables: BIN MPIRUN NP DATA WORK MODE (infer | infer_generated | infer_fault_drop-halo | train | train_diverging |
# train_fault_drop-halo | train_fault_drop-fold | input_errors | rank0_error | empty_features | no_partition).
file(MAKE_DIRECTORY ${WORK})
if(MODE STREQUAL "empty_features")
  # A features file with no images (header `0 1024 0`): the single-process and the distributed run both accept
  # it and print throughput 0 (the distributed run divided by a zero time and printed -nan).
  set(LAYERS 2)
  set(METHOD block)
  file(WRITE ${WORK}/empty.mtx "%%MatrixMarket matrix coordinate real general\n0 1024 0\n")
elseif(MODE STREQUAL "input_errors")
  # Input errors that every rank finds (or one rank only) before the run: printed once, exit 2, no MPI_Abort
  # (before: the line once per rank, then MPI_ABORT banners; a neuron-count mismatch gave no numbers).
  set(LAYERS 4)
  set(METHOD block)
elseif(MODE STREQUAL "rank0_error")
  # An error on rank 0 only (the categories file cannot be written: /proc accepts the up-front check as root,
  # then refuses the file) while rank 1 waits in a collective: the job must end with exit 2 and the error
  # line, not hang (before: rank 0 finalised MPI and rank 1 waited for ever).
  set(LAYERS 2)
  set(METHOD block)
elseif(MODE STREQUAL "no_partition")
  # infer / train under mpirun without --partition: every rank would run the whole job (and print it again);
  # partition under mpirun at all
  set(LAYERS 2)
  set(METHOD block)
elseif(MODE STREQUAL "infer")
  set(LAYERS 30)
  # One partitioner per rank count keeps the suite quick (hypergraph costs ~10 s here) and checks all three.
  if(NP EQUAL 2)
    set(METHOD block)
  elseif(NP EQUAL 3)
    set(METHOD random)
  else()
    set(METHOD hypergraph)
  endif()
else()
  # Training, and inference on a generated body (infer_generated, infer_fault_*): a generated RadiX-Net body (He
  # init) and a random partition, so that every layer communicates non-zero values. On the challenge subset 98 %
  # of the entries sent are zeros, and a dropped halo vector (infer_fault_drop-halo) went unnoticed there
  # (thirty-seventh session's review); on this body the challenge features with bias -0.1 keep 1159 of 1200
  # images alive through 6 layers.
  # train_diverging: generate's default (challenge) init at the default lr 0.05, whose loss diverges: --verify
  # failed this correct run (parameters 4.0e-5 apart against a fixed 1e-5) and nothing warned of the divergence.
  # train_fault_*: the engine made wrong on purpose (SPARTAN_SDNN_TEST_FAULT, dist.h): --verify must fail.
  set(LAYERS 4)
  if(MODE MATCHES "^infer_")
    set(LAYERS 6)
  endif()
  set(METHOD random)
  set(INIT --init he --seed 3)
  if(MODE STREQUAL "train_diverging")
    set(INIT "")
  endif()
  execute_process(COMMAND ${BIN} generate --neurons 1024 --layers ${LAYERS} ${INIT} --out ${WORK}/net
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "generate failed (${rc}):\n${out}\n${err}")
  endif()
  set(DATA ${WORK}/net)
endif()
execute_process(COMMAND ${BIN} partition --weights ${DATA} --layers ${LAYERS} --parts ${NP} --method ${METHOD} --out ${WORK}/part.txt
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "partition failed (${rc}):\n${out}\n${err}")
endif()
set(MPI ${MPIRUN} --oversubscribe --allow-run-as-root -np ${NP})
if(MODE STREQUAL "empty_features")
  set(ARGS infer --weights ${DATA} --layers ${LAYERS} --features ${WORK}/empty.mtx --bias -0.3 --threads 1)
  execute_process(COMMAND ${BIN} ${ARGS} RESULT_VARIABLE rc1 OUTPUT_VARIABLE out1 ERROR_VARIABLE err1 TIMEOUT 120)
  execute_process(COMMAND ${MPI} ${BIN} ${ARGS} --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  function(check_empty what code text)
    if(NOT code EQUAL 0)
      message(FATAL_ERROR "${what} infer of 0 images failed (${code}):\n${text}")
    endif()
    if(NOT text MATCHES "categories: 0 of 0 images" OR NOT text MATCHES "throughput 0 images\\*edges/s")
      message(FATAL_ERROR "${what} infer of 0 images: expected 'categories: 0 of 0 images' and 'throughput 0 images*edges/s':\n${text}")
    endif()
  endfunction()
  check_empty("single-process" "${rc1}" "${out1}${err1}")
  check_empty("mpirun -np ${NP}" "${rc}" "${out}${err}")
  return()
elseif(MODE STREQUAL "input_errors")
  set(F ${DATA}/sparse-images-1024_subset.mtx.gz)
  function(expect_one_error what line)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    string(REGEX MATCHALL "spartan-sdnn: error:[^\n]*" lines "${err}")
    list(LENGTH lines n)
    if(NOT rc EQUAL 2 OR NOT n EQUAL 1 OR err MATCHES "MPI_ABORT" OR NOT err MATCHES "${line}")
      message(FATAL_ERROR "${what}: expected exit 2 and one line matching '${line}' (no MPI_ABORT), got exit '${rc}', ${n} error lines:\n${err}")
    endif()
  endfunction()
  # the reported case: a 4-layer partition for a 3-layer generated body (train); every rank finds it
  expect_one_error("train, layer count mismatch" "spartan-sdnn: error: partition has 4 layers, the network 3"
    ${MPI} ${BIN} train --partition ${WORK}/part.txt --neurons 1024 --layers 3 --train-limit 64 --test-limit 64 --batch 32 --threads 1)
  expect_one_error("train, neuron count mismatch" "spartan-sdnn: error: partition layer 1 has 1024 neurons, the network 4096"
    ${MPI} ${BIN} train --partition ${WORK}/part.txt --neurons 4096 --layers 4 --train-limit 64 --test-limit 64 --batch 32 --threads 1)
  expect_one_error("infer, missing features" "spartan-sdnn: error: cannot open '/nonexistent-sdnn-features': no such file"
    ${MPI} ${BIN} infer --partition ${WORK}/part.txt --weights ${DATA} --layers 4 --features /nonexistent-sdnn-features --bias -0.3 --threads 1)
  # an error on rank 1 only (MPMD: rank 1 is given a missing features file): printed by rank 0 with the rank
  expect_one_error("infer, error on rank 1 only" "spartan-sdnn: error: rank 1: cannot open '/nonexistent-sdnn-features': no such file"
    ${MPIRUN} --oversubscribe --allow-run-as-root
    -np 1 ${BIN} infer --partition ${WORK}/part.txt --weights ${DATA} --layers 4 --features ${F} --bias -0.3 --threads 1 :
    -np 1 ${BIN} infer --partition ${WORK}/part.txt --weights ${DATA} --layers 4 --features /nonexistent-sdnn-features --bias -0.3 --threads 1)
  return()
elseif(MODE STREQUAL "rank0_error")
  execute_process(COMMAND ${MPI} ${BIN} infer --weights ${DATA} --layers ${LAYERS} --features ${DATA}/sparse-images-1024_subset.mtx.gz
    --bias -0.3 --threads 1 --partition ${WORK}/part.txt --categories-out /proc/spartan-sdnn-test-categories.txt
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "expected exit 2 from the whole job, got '${rc}':\n${out}\n${err}")
  endif()
  if(NOT err MATCHES "spartan-sdnn: error: /proc/spartan-sdnn-test-categories.txt")
    message(FATAL_ERROR "the error line is missing:\n${err}")
  endif()
  return()
elseif(MODE STREQUAL "infer")
  # 1200 images: passes of 1024 + 176 (default --batch), or 500 + 500 + 200 at np 2
  set(BATCH_OPT "")
  if(NP EQUAL 2)
    set(BATCH_OPT --batch 500)
  endif()
  execute_process(COMMAND ${MPI} ${BIN} infer --weights ${DATA} --layers ${LAYERS} --features ${DATA}/sparse-images-1024_subset.mtx.gz
    --bias -0.3 --threads 1 --partition ${WORK}/part.txt ${BATCH_OPT} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(NEED "expand volume: predicted .* EQUAL" "verify vs shared-memory inference: categories identical.*OK")
elseif(MODE MATCHES "^infer_(generated|fault_(.*))$")
  set(FAULT "${CMAKE_MATCH_2}")
  set(CATS ${WORK}/categories.txt)
  file(REMOVE ${CATS})
  set(EXPORT "")
  if(FAULT)
    set(ENV{SPARTAN_SDNN_TEST_FAULT} "${FAULT}")
    set(EXPORT -x SPARTAN_SDNN_TEST_FAULT)
  endif()
  execute_process(COMMAND ${MPI} ${EXPORT} ${BIN} infer --weights ${DATA} --layers ${LAYERS}
    --features ${SDNN_FEATURES} --bias -0.1 --threads 1 --partition ${WORK}/part.txt --batch 500 --categories-out ${CATS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  unset(ENV{SPARTAN_SDNN_TEST_FAULT})
  if(FAULT)
    # The engine made wrong on purpose: the check must fail (exit 1) and leave no categories file.
    if(NOT rc EQUAL 1 OR NOT out MATCHES "verify vs shared-memory inference: [^\n]*FAILED")
      message(FATAL_ERROR "with the ${FAULT} fault the verification must report FAILED and exit 1, got '${rc}':\n${out}\n${err}")
    endif()
    if(EXISTS ${CATS})
      message(FATAL_ERROR "a run that failed its checks wrote ${CATS}")
    endif()
    return()
  endif()
  if(NOT out MATCHES "categories: ([0-9]+) of 1200 images")
    message(FATAL_ERROR "no categories line:\n${out}\n${err}")
  endif()
  set(NCAT ${CMAKE_MATCH_1})
  if(NCAT LESS 600)
    message(FATAL_ERROR "only ${NCAT} of 1200 images keep a non-zero: the body does not exercise the exchange")
  endif()
  file(STRINGS ${CATS} lines)
  list(LENGTH lines nlines)
  if(NOT nlines EQUAL NCAT)
    message(FATAL_ERROR "${CATS} has ${nlines} lines, the run reported ${NCAT} categories")
  endif()
  set(NEED "expand volume: predicted [1-9][0-9]* bytes.* EQUAL" "verify vs shared-memory inference: categories identical, activation structure identical, max [|]diff[|] 0: OK")
elseif(MODE STREQUAL "no_partition")
  foreach(cmd infer train)
    if(cmd STREQUAL "infer")
      set(ARGS infer --weights ${DATA} --layers ${LAYERS} --features ${DATA}/sparse-images-1024_subset.mtx.gz --bias -0.3 --threads 1)
    else()
      set(ARGS train --neurons 1024 --layers 2 --train-limit 64 --test-limit 64 --batch 32 --threads 1)
    endif()
    execute_process(COMMAND ${MPI} ${BIN} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
    string(REGEX MATCHALL "spartan-sdnn: error:[^\n]*" lines "${err}")
    list(LENGTH lines n)
    if(NOT rc EQUAL 2 OR NOT n EQUAL 1 OR NOT err MATCHES "${cmd} runs under mpirun with ${NP} ranks but without --partition"
       OR out MATCHES "categories:|epoch 1")
      message(FATAL_ERROR "${cmd} under mpirun without --partition: expected exit 2, one error line and no results, got '${rc}', ${n} lines:\n${out}\n${err}")
    endif()
  endforeach()
  # partition always runs on one process: under mpirun every rank wrote the same --out (new-user review).
  execute_process(COMMAND ${MPI} ${BIN} partition --weights ${DATA} --layers ${LAYERS} --parts 2 --method block
                  --out ${WORK}/np.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  string(REGEX MATCHALL "spartan-sdnn: error:[^\n]*" lines "${err}")
  list(LENGTH lines n)
  if(NOT rc EQUAL 2 OR NOT n EQUAL 1 OR NOT err MATCHES "partition runs on one process, not under mpirun" OR EXISTS ${WORK}/np.txt)
    message(FATAL_ERROR "partition under mpirun: expected exit 2, one error line and no --out, got '${rc}', ${n} lines:\n${out}\n${err}")
  endif()
  return()
elseif(MODE STREQUAL "train_diverging")
  execute_process(COMMAND ${MPI} ${BIN} train --weights ${DATA} --layers ${LAYERS} --train-limit 300 --test-limit 100 --batch 32
    --threads 1 --verify --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT err MATCHES "spartan-sdnn: warning: training diverged at batch [0-9]+ \\(loss")
    message(FATAL_ERROR "no divergence warning on stderr:\n${out}\n${err}")
  endif()
  set(NEED "verify vs single-rank training: .*OK")
elseif(MODE MATCHES "^train_fault_(.*)$")
  set(FAULT ${CMAKE_MATCH_1})
  set(ENV{SPARTAN_SDNN_TEST_FAULT} ${FAULT})
  execute_process(COMMAND ${MPI} -x SPARTAN_SDNN_TEST_FAULT ${BIN} train --weights ${DATA} --layers ${LAYERS} --train-limit 256 --test-limit 128
    --batch 32 --lr 0.02 --threads 1 --verify --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  unset(ENV{SPARTAN_SDNN_TEST_FAULT})
  if(NOT rc EQUAL 1 OR NOT out MATCHES "verify vs single-rank training: [^\n]*FAILED")
    message(FATAL_ERROR "with the ${FAULT} fault --verify must report FAILED and exit 1, got '${rc}':\n${out}\n${err}")
  endif()
  if(NOT err MATCHES "warning: SPARTAN_SDNN_TEST_FAULT=${FAULT}: the distributed engine is wrong on purpose")
    message(FATAL_ERROR "the active test fault was not announced on stderr:\n${err}")
  endif()
  return()
else()
  execute_process(COMMAND ${MPI} ${BIN} train --weights ${DATA} --layers ${LAYERS} --train-limit 256 --test-limit 128 --batch 32 --lr 0.02
    --threads 1 --verify --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # The logits all-reduce: 10 classes x 4 bytes per image of the 256 training and 128 test images, from each rank.
  math(EXPR AR "(256 + 128) * 10 * 4 * ${NP}")
  set(NEED "expand volume: predicted [1-9][0-9]* bytes.* EQUAL" "fold volume: predicted .* EQUAL" "verify vs single-rank training: .*OK"
           "all-reduce [^\n]*: ${AR} bytes contributed")
endif()
message(STATUS "${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun -np ${NP} ${MODE} failed (${rc}):\n${out}\n${err}")
endif()
foreach(re ${NEED})
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "output lacks '${re}'")
  endif()
endforeach()
