# cmake -DIN=file -DOUT=header -DNAME=kName -P embed_text.cmake: the file's
# text as a C++ raw string constant (fanout::server::NAME), so a page can be
# edited as a page and still be part of the binary.
file(READ "${IN}" content)
string(FIND "${content}" ")FANOUT_EMBED" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )FANOUT_EMBED")
endif()
file(WRITE "${OUT}.tmp" "// Generated from ${IN} at build time: edit that file.
#pragma once
namespace fanout::server {
inline constexpr char ${NAME}[] = R\"FANOUT_EMBED(${content})FANOUT_EMBED\";
}  // namespace fanout::server
")
file(RENAME "${OUT}.tmp" "${OUT}")
