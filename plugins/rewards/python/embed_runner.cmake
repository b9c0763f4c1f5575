# cmake -DIN=runner.py -DOUT=runner_py.h [-DNAME=tern_python_runner] -P embed_runner.cmake:
# a Python file as a C string, NAME[] (default tern_python_runner), one
# literal per source line. The python environment embeds its runner with it too.
if(NOT NAME)
  set(NAME tern_python_runner)
endif()
get_filename_component(_from ${IN} NAME)
get_filename_component(_to ${OUT} NAME)
file(READ ${IN} text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
file(WRITE ${OUT} "/* ${_to}: generated from ${_from} by embed_runner.cmake; do not edit. */\n"
  "static const char ${NAME}[] =\n    \"${text}\";\n")
