# Fails unless README contains the example source verbatim (keeps the
# README's quick start compiling: the example itself is built and run).
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "${example}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "README.md does not show ${EXAMPLE} verbatim")
endif()
