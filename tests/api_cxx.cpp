/*
 * api_cxx.cpp — the same checks as api_c99.c, compiled as C++11 (-Wall -Werror): the public
 * header's declarations are usable from C++ (extern "C" linkage, no C-only constructs), and
 * the program links against the shared library. One source, two languages, so they cannot drift.
 */
#include "api_c99.c"
