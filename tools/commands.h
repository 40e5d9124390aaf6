/*
 * commands.h — the subcommands of the flashc tool. Each takes the whole argv and the
 * index of its first own argument, prints its report, and returns the exit status
 * (TOOL_EXIT_* in common.h).
 */
#ifndef FLASHC_TOOL_COMMANDS_H
#define FLASHC_TOOL_COMMANDS_H

int cmd_info(int argc, char** argv, int first);
int cmd_demo(int argc, char** argv, int first);
int cmd_attn(int argc, char** argv, int first);
int cmd_gemm(int argc, char** argv, int first);

#endif
