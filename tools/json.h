/*
 * json.h — a small streaming JSON writer for `--json` output: objects and arrays nest,
 * commas and indentation are handled here, strings are escaped, and numbers that JSON
 * cannot hold (NaN, ±inf) are written as null.
 *
 *   json_writer w;  json_init(&w, stdout);
 *   json_object_begin(&w, NULL);  json_int(&w, "batch", 2);  json_object_end(&w);
 */
#ifndef FLASHC_TOOL_JSON_H
#define FLASHC_TOOL_JSON_H

#include <stdio.h>

#define JSON_MAX_DEPTH 16

typedef struct json_writer {
  FILE* out;
  int depth;
  int has_items[JSON_MAX_DEPTH]; /* whether the container at each depth has an item yet */
} json_writer;

void json_init(json_writer* w, FILE* out);
/* `key` is the member name inside an object, NULL at the top level and inside arrays. */
void json_object_begin(json_writer* w, const char* key);
void json_object_end(json_writer* w); /* ends the line after the top-level object */
void json_array_begin(json_writer* w, const char* key);
void json_array_end(json_writer* w);
void json_string(json_writer* w, const char* key, const char* value); /* NULL → null */
void json_int(json_writer* w, const char* key, long long value);
void json_number(json_writer* w, const char* key, double value);
void json_bool(json_writer* w, const char* key, int value);
void json_null(json_writer* w, const char* key);

#endif
