/*
 * flashc.c — main() of the `flashc` command-line tool: dispatch to a subcommand, the
 * top-level --help and --version.
 *
 *   flashc info                 versions, build, devices, kernels
 *   flashc demo                 attention fwd + bwd and a GEMM, checked (the README's first command)
 *   flashc attn [options]       one attention case: --check, --bench, --json
 *   flashc gemm [options]       one GEMM: --check, --bench, --json
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "common.h"

typedef struct subcommand {
  const char* name;
  int (*run)(int argc, char** argv, int first);
  const char* summary;
} subcommand;

static const subcommand subcommands[] = {
    {"info", cmd_info, "library version, build configuration, devices and their kernels"},
    {"demo", cmd_demo, "attention forward + backward and a GEMM, checked against the fp64 reference"},
    {"attn", cmd_attn, "run, check (--check) and time (--bench) one attention case"},
    {"gemm", cmd_gemm, "run, check (--check) and time (--bench) one GEMM"},
};
#define SUBCOMMAND_COUNT (sizeof subcommands / sizeof subcommands[0])

static void print_help(FILE* out) {
  fprintf(out,
          "usage: flashc <command> [options]\n"
          "       flashc <command> --help\n"
          "       flashc --version\n"
          "\n"
          "flashc runs FlashAttention-3-class attention and GEMM kernels on a GPU, or the same\n"
          "operations on its CPU backend, and checks them against an fp64 reference.\n"
          "\n"
          "Commands:\n");
  for (size_t i = 0; i < SUBCOMMAND_COUNT; ++i)
    fprintf(out, "  %-6s %s\n", subcommands[i].name, subcommands[i].summary);
  fprintf(out,
          "\n"
          "Exit status: 0 success, 1 library or runtime error, 2 usage error, 3 a check failed.\n"
          "\n"
          "Examples:\n"
          "  flashc demo\n"
          "  flashc attn --check\n"
          "  flashc attn --causal --heads-kv 2 --varlen --backward --check\n"
          "  flashc gemm --m 4096 --n 4096 --k 4096 --bench\n");
}

static void print_version(void) {
  char runtime[32], header[32];
  printf("flashc %s (library %s, header %s)\n", tool_version_string(FLASHC_VERSION, header, sizeof header),
         tool_version_string(flashc_version(), runtime, sizeof runtime), header);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    print_help(stderr);
    return TOOL_EXIT_USAGE;
  }
  const char* name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    print_help(stdout);
    return TOOL_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    print_version();
    return TOOL_EXIT_OK;
  }
  if (strcmp(name, "help") == 0) { /* "flashc help attn" = "flashc attn --help" */
    if (argc < 3) {
      print_help(stdout);
      return TOOL_EXIT_OK;
    }
    for (size_t i = 0; i < SUBCOMMAND_COUNT; ++i) {
      if (strcmp(argv[2], subcommands[i].name) == 0) {
        char help_flag[] = "--help";
        char* help_argv[] = {argv[0], argv[2], help_flag, NULL};
        return subcommands[i].run(3, help_argv, 2);
      }
    }
    fprintf(stderr, "flashc: unknown command '%s' (see flashc --help)\n", argv[2]);
    return TOOL_EXIT_USAGE;
  }
  for (size_t i = 0; i < SUBCOMMAND_COUNT; ++i)
    if (strcmp(name, subcommands[i].name) == 0) return subcommands[i].run(argc, argv, 2);
  if (name[0] == '-') fprintf(stderr, "flashc: unknown option '%s' (see flashc --help)\n", name);
  else fprintf(stderr, "flashc: unknown command '%s' (see flashc --help)\n", name);
  return TOOL_EXIT_USAGE;
}
