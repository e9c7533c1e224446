/* commands.h — the qmm tool's subcommands. Each takes argv starting at its own name and
 * returns the process exit status (0 ok, 1 verification failure or runtime error, 2 usage). */
#ifndef QMM_TOOL_COMMANDS_H
#define QMM_TOOL_COMMANDS_H

int qmm_cmd_bench(int argc, char **argv); /* bench.c */
int qmm_cmd_info(int argc, char **argv);  /* info.c */
int qmm_cmd_tune(int argc, char **argv);  /* tune.c */

#endif
