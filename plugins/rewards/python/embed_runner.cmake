# cmake -DIN=runner.py -DOUT=runner_py.h -P embed_runner.cmake: runner.py as a
# C string, tern_python_runner[], one literal per source line.
file(READ ${IN} text)
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
file(WRITE ${OUT} "/* runner_py.h: generated from runner.py by embed_runner.cmake; do not edit. */\n"
  "static const char tern_python_runner[] =\n    \"${text}\";\n")
