/* json.c — the streaming JSON writer behind `--json` (two-space indentation). */
#include "json.h"

#include <math.h>

void json_init(json_writer* w, FILE* out) {
  w->out = out;
  w->depth = 0;
  w->has_items[0] = 0;
}

static void write_escaped(FILE* out, const char* text) {
  fputc('"', out);
  for (const unsigned char* c = (const unsigned char*)text; *c; ++c) {
    switch (*c) {
      case '"': fputs("\\\"", out); break;
      case '\\': fputs("\\\\", out); break;
      case '\n': fputs("\\n", out); break;
      case '\t': fputs("\\t", out); break;
      case '\r': fputs("\\r", out); break;
      default:
        if (*c < 0x20) fprintf(out, "\\u%04x", *c);
        else fputc(*c, out);
    }
  }
  fputc('"', out);
}

/* Comma, newline and indentation before an item, then its key. */
static void begin_item(json_writer* w, const char* key) {
  if (w->depth > 0) {
    fputs(w->has_items[w->depth] ? ",\n" : "\n", w->out);
    w->has_items[w->depth] = 1;
    fprintf(w->out, "%*s", 2 * w->depth, "");
  }
  if (key) {
    write_escaped(w->out, key);
    fputs(": ", w->out);
  }
}

static void open_container(json_writer* w, const char* key, char bracket) {
  begin_item(w, key);
  fputc(bracket, w->out);
  if (w->depth + 1 < JSON_MAX_DEPTH) w->depth++;
  w->has_items[w->depth] = 0;
}

static void close_container(json_writer* w, char bracket) {
  int had_items = w->has_items[w->depth];
  if (w->depth > 0) w->depth--;
  if (had_items) fprintf(w->out, "\n%*s", 2 * w->depth, "");
  fputc(bracket, w->out);
  if (w->depth == 0) fputc('\n', w->out);
}

void json_object_begin(json_writer* w, const char* key) { open_container(w, key, '{'); }
void json_object_end(json_writer* w) { close_container(w, '}'); }
void json_array_begin(json_writer* w, const char* key) { open_container(w, key, '['); }
void json_array_end(json_writer* w) { close_container(w, ']'); }

void json_string(json_writer* w, const char* key, const char* value) {
  begin_item(w, key);
  if (value) write_escaped(w->out, value);
  else fputs("null", w->out);
}

void json_int(json_writer* w, const char* key, long long value) {
  begin_item(w, key);
  fprintf(w->out, "%lld", value);
}

void json_number(json_writer* w, const char* key, double value) {
  begin_item(w, key);
  if (isfinite(value)) fprintf(w->out, "%.9g", value);
  else fputs("null", w->out);
}

void json_bool(json_writer* w, const char* key, int value) {
  begin_item(w, key);
  fputs(value ? "true" : "false", w->out);
}

void json_null(json_writer* w, const char* key) {
  begin_item(w, key);
  fputs("null", w->out);
}
