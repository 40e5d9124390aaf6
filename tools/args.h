/*
 * args.h — the table-driven option parser shared by every subcommand.
 *
 * A subcommand describes its options once, as tables of arg_option (long name, kind,
 * where the value goes, help text); the same tables drive parsing, validation of the
 * values and the --help text, so no subcommand parses argv by hand. Options are written
 * `--name VALUE` or `--name=VALUE`; flags take no value. Errors print one line to stderr
 * ("flashc attn: unknown option '--foo' (see flashc attn --help)") and make args_parse
 * return ARGS_ERROR, which the command turns into exit status 2.
 */
#ifndef FLASHC_TOOL_ARGS_H
#define FLASHC_TOOL_ARGS_H

#include <stdio.h>

typedef enum arg_kind {
  ARG_FLAG,     /* int*: set to 1 */
  ARG_INT,      /* int*, range checked by arg_option.range */
  ARG_DOUBLE,   /* double*, must be finite */
  ARG_CHOICE,   /* int*: the value of the matching arg_choice */
  ARG_INT_PAIR, /* int[2]: "L,R" */
} arg_kind;

typedef enum arg_range {
  ARG_ANY = 0,      /* any int */
  ARG_NON_NEGATIVE, /* >= 0 */
  ARG_POSITIVE,     /* >= 1 */
  ARG_MIN_MINUS_ONE /* >= -1 (-1 meaning "unbounded" or "automatic") */
} arg_range;

typedef struct arg_choice {
  const char* name;
  int value;
} arg_choice; /* tables end with {NULL, 0} */

typedef struct arg_option {
  const char* name;           /* long name without the dashes: "seqlen-q" */
  arg_kind kind;
  void* value;                /* destination; holds the default before parsing */
  const char* metavar;        /* "N", "L,R"; ignored for flags and choices */
  const char* help;
  const arg_choice* choices;  /* ARG_CHOICE */
  arg_range range;            /* ARG_INT, ARG_INT_PAIR (each element) */
  int* seen;                  /* optional: set to 1 when the option is given */
  const char* default_text;   /* replaces the printed default; "" prints none */
} arg_option; /* tables end with an entry whose name is NULL */

typedef struct arg_section {
  const char* title;          /* "Problem", "Run" */
  const arg_option* options;
} arg_section;

typedef struct arg_command {
  const char* prog;           /* "flashc attn": prefix of every message */
  const char* usage;          /* "flashc attn [options]" */
  const char* description;    /* paragraph(s) printed under the usage line */
  const arg_section* sections;
  int section_count;
  const char* epilog;         /* printed after the options (examples); may be NULL */
} arg_command;

typedef enum args_result { ARGS_OK, ARGS_HELP, ARGS_ERROR } args_result;

/* Parses argv[first..argc) into the option tables of `command`. -h / --help → ARGS_HELP. */
args_result args_parse(const arg_command* command, int argc, char** argv, int first);

/* The --help text generated from the tables, with each option's current value as default. */
void args_print_help(const arg_command* command, FILE* out);

/* The name of `value` in a choice table, "?" if absent. */
const char* args_choice_name(const arg_choice* choices, int value);

#endif
