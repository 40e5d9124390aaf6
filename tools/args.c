/* args.c — the table-driven option parser and the --help text generated from the same tables. */
#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Width of the option column in --help; longer option columns get their own line. */
#define HELP_OPTION_COLUMN 30

/* "<prog>: <message> (see <prog> --help)" on stderr. */
static void usage_error(const arg_command* command, const char* format, ...) TOOL_PRINTF_FORMAT(2, 3);
static void usage_error(const arg_command* command, const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "%s: ", command->prog);
  vfprintf(stderr, format, args);
  fprintf(stderr, " (see %s --help)\n", command->prog);
  va_end(args);
}

static const arg_option* find_option(const arg_command* command, const char* name, size_t name_length) {
  for (int s = 0; s < command->section_count; ++s)
    for (const arg_option* option = command->sections[s].options; option->name; ++option)
      if (strlen(option->name) == name_length && strncmp(option->name, name, name_length) == 0) return option;
  return NULL;
}

const char* args_choice_name(const arg_choice* choices, int value) {
  for (const arg_choice* choice = choices; choice && choice->name; ++choice)
    if (choice->value == value) return choice->name;
  return "?";
}

/* Parses a whole string as an int; 0 on success. */
static int parse_int(const char* text, int* out) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || value < INT_MIN || value > INT_MAX) return -1;
  *out = (int)value;
  return 0;
}

static const char* range_violation(arg_range range, int value) {
  switch (range) {
    case ARG_NON_NEGATIVE: return value < 0 ? "must be >= 0" : NULL;
    case ARG_POSITIVE: return value < 1 ? "must be >= 1" : NULL;
    case ARG_MIN_MINUS_ONE: return value < -1 ? "must be >= -1" : NULL;
    default: return NULL;
  }
}

/* Stores `text` into the option's destination; prints the error and returns -1 if malformed. */
static int store_value(const arg_command* command, const arg_option* option, const char* text) {
  char flag[80];
  snprintf(flag, sizeof flag, "--%s", option->name);
  switch (option->kind) {
    case ARG_INT: {
      int value;
      if (parse_int(text, &value) != 0) {
        usage_error(command, "invalid value '%s' for '%s': expected an integer", text, flag);
        return -1;
      }
      const char* violation = range_violation(option->range, value);
      if (violation) {
        usage_error(command, "invalid value '%s' for '%s': %s", text, flag, violation);
        return -1;
      }
      *(int*)option->value = value;
      return 0;
    }
    case ARG_DOUBLE: {
      char* end = NULL;
      errno = 0;
      double value = strtod(text, &end);
      if (end == text || *end != '\0' || errno == ERANGE || !isfinite(value)) {
        usage_error(command, "invalid value '%s' for '%s': expected a finite number", text, flag);
        return -1;
      }
      *(double*)option->value = value;
      return 0;
    }
    case ARG_CHOICE: {
      for (const arg_choice* choice = option->choices; choice->name; ++choice) {
        if (strcmp(choice->name, text) == 0) {
          *(int*)option->value = choice->value;
          return 0;
        }
      }
      char expected[256] = "";
      for (const arg_choice* choice = option->choices; choice->name; ++choice) {
        if (choice != option->choices) strncat(expected, ", ", sizeof expected - strlen(expected) - 1);
        strncat(expected, choice->name, sizeof expected - strlen(expected) - 1);
      }
      usage_error(command, "invalid value '%s' for '%s': expected one of %s", text, flag, expected);
      return -1;
    }
    case ARG_INT_PAIR: {
      const char* comma = strchr(text, ',');
      char first[64];
      int pair[2];
      size_t first_length = comma ? (size_t)(comma - text) : 0;
      if (!comma || first_length >= sizeof first) {
        usage_error(command, "invalid value '%s' for '%s': expected two integers as L,R", text, flag);
        return -1;
      }
      memcpy(first, text, first_length);
      first[first_length] = '\0';
      if (parse_int(first, &pair[0]) != 0 || parse_int(comma + 1, &pair[1]) != 0) {
        usage_error(command, "invalid value '%s' for '%s': expected two integers as L,R", text, flag);
        return -1;
      }
      for (int i = 0; i < 2; ++i) {
        const char* violation = range_violation(option->range, pair[i]);
        if (violation) {
          usage_error(command, "invalid value '%s' for '%s': each number %s", text, flag, violation);
          return -1;
        }
      }
      ((int*)option->value)[0] = pair[0];
      ((int*)option->value)[1] = pair[1];
      return 0;
    }
    case ARG_FLAG:
      break;
  }
  return -1;
}

args_result args_parse(const arg_command* command, int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    const char* argument = argv[i];
    if (strcmp(argument, "-h") == 0 || strcmp(argument, "--help") == 0) return ARGS_HELP;
    if (strncmp(argument, "--", 2) != 0 || argument[2] == '\0') {
      if (argument[0] == '-') usage_error(command, "unknown option '%s'", argument);
      else usage_error(command, "unexpected argument '%s'", argument);
      return ARGS_ERROR;
    }
    const char* name = argument + 2;
    const char* equals = strchr(name, '=');
    size_t name_length = equals ? (size_t)(equals - name) : strlen(name);
    const arg_option* option = find_option(command, name, name_length);
    if (!option) {
      char shown[128];
      snprintf(shown, sizeof shown, "--%.*s", (int)(name_length < 100 ? name_length : 100), name);
      usage_error(command, "unknown option '%s'", shown);
      return ARGS_ERROR;
    }
    if (option->kind == ARG_FLAG) {
      if (equals) {
        usage_error(command, "option '--%s' takes no value (got '%s')", option->name, equals + 1);
        return ARGS_ERROR;
      }
      *(int*)option->value = 1;
    } else {
      const char* text;
      if (equals) {
        text = equals + 1;
      } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) { /* "--batch --causal": value missing */
        text = argv[++i];
      } else {
        usage_error(command, "option '--%s' needs a value", option->name);
        return ARGS_ERROR;
      }
      if (store_value(command, option, text) != 0) return ARGS_ERROR;
    }
    if (option->seen) *option->seen = 1;
  }
  return ARGS_OK;
}

/* The default shown in --help, from the destination's value before parsing. */
static void format_default(const arg_option* option, char* text, size_t capacity) {
  text[0] = '\0';
  if (option->default_text) {
    if (option->default_text[0]) snprintf(text, capacity, " (default: %s)", option->default_text);
    return;
  }
  switch (option->kind) {
    case ARG_INT: snprintf(text, capacity, " (default: %d)", *(const int*)option->value); break;
    case ARG_DOUBLE: snprintf(text, capacity, " (default: %g)", *(const double*)option->value); break;
    case ARG_CHOICE:
      snprintf(text, capacity, " (default: %s)", args_choice_name(option->choices, *(const int*)option->value));
      break;
    case ARG_INT_PAIR:
      snprintf(text, capacity, " (default: %d,%d)", ((const int*)option->value)[0], ((const int*)option->value)[1]);
      break;
    case ARG_FLAG: break;
  }
}

void args_print_help(const arg_command* command, FILE* out) {
  fprintf(out, "usage: %s\n\n%s\n", command->usage, command->description);
  for (int s = 0; s < command->section_count; ++s) {
    fprintf(out, "\n%s:\n", command->sections[s].title);
    for (const arg_option* option = command->sections[s].options; option->name; ++option) {
      char column[160];
      if (option->kind == ARG_FLAG) {
        snprintf(column, sizeof column, "  --%s", option->name);
      } else if (option->kind == ARG_CHOICE) {
        char names[128] = "";
        for (const arg_choice* choice = option->choices; choice->name; ++choice) {
          strncat(names, choice == option->choices ? "{" : ",", sizeof names - strlen(names) - 1);
          strncat(names, choice->name, sizeof names - strlen(names) - 1);
        }
        snprintf(column, sizeof column, "  --%s %s}", option->name, names);
      } else {
        snprintf(column, sizeof column, "  --%s %s", option->name, option->metavar ? option->metavar : "VALUE");
      }
      char default_text[96];
      format_default(option, default_text, sizeof default_text);
      if (strlen(column) + 2 > HELP_OPTION_COLUMN)
        fprintf(out, "%s\n%*s%s%s\n", column, HELP_OPTION_COLUMN, "", option->help, default_text);
      else
        fprintf(out, "%-*s%s%s\n", HELP_OPTION_COLUMN, column, option->help, default_text);
    }
  }
  if (command->epilog) fprintf(out, "\n%s", command->epilog);
}
