# embed.cmake: writes the C array of a text file (cmake -DIN=... -DOUT=... -DNAME=... -P),
# so harness.py stays a Python file you can read and run, and travels inside the plugin.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* generated from ${IN} by embed.cmake */\n#include <stddef.h>\n"
  "const char ${NAME}[] = {${bytes} 0};\n"
  "const size_t ${NAME}_len = sizeof ${NAME} - 1;\n")
