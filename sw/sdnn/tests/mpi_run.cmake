# Distributed check run by CTest: partition the challenge subset for NP ranks (block / random / Zoltan PHG), run
# `mpirun -np NP spartan-sdnn infer|train --partition ...` and require the run's own checks to pass:
# predicted (connectivity-1) volume == measured bytes sent, and equality with the single-rank result.
# Variables: BIN MPIRUN NP DATA WORK MODE (infer | train).
file(MAKE_DIRECTORY ${WORK})
if(MODE STREQUAL "infer")
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
  # Training: a generated RadiX-Net body (He init) and a random partition, so that every layer communicates.
  set(LAYERS 4)
  set(METHOD random)
  execute_process(COMMAND ${BIN} generate --neurons 1024 --layers ${LAYERS} --init he --seed 3 --out ${WORK}/net
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
if(MODE STREQUAL "infer")
  execute_process(COMMAND ${MPI} ${BIN} infer --weights ${DATA} --layers ${LAYERS} --features ${DATA}/sparse-images-1024_subset.mtx.gz
    --bias -0.3 --threads 1 --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(NEED "expand volume: predicted .* EQUAL" "verify vs shared-memory inference: categories identical.*OK")
else()
  execute_process(COMMAND ${MPI} ${BIN} train --weights ${DATA} --layers ${LAYERS} --train-limit 256 --test-limit 128 --batch 32 --lr 0.02
    --threads 1 --verify --partition ${WORK}/part.txt RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(NEED "expand volume: predicted [1-9][0-9]* bytes.* EQUAL" "fold volume: predicted .* EQUAL" "verify vs single-rank training: .*OK")
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
