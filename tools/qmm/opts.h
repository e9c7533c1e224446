/*
 * opts.h — strict parsing of command-line and environment values for the qmm tool.
 *
 * Every parser takes the name the user typed (a flag like "--iters" or an environment
 * variable like "ITERS"), and on a bad value prints one line to stderr naming that flag or
 * variable and the value ("qmm bench: --iters '0' is out of range 1..1000000") and returns
 * false. Nothing is ever silently defaulted: a value is either parsed whole or rejected.
 * The line starts with opt_command ("qmm bench" unless a command sets it).
 */
#ifndef QMM_TOOL_OPTS_H
#define QMM_TOOL_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qmm.h"

/* The command named at the start of each message (default "qmm bench"). */
extern const char *opt_command;

/* Parse a whole decimal integer in [lo, hi]. Rejects empty strings, signs where lo >= 0
 * would be violated, trailing characters, spaces, and values out of range. */
bool opt_i64(const char *name, const char *s, int64_t lo, int64_t hi, int64_t *out);

/* A comma-separated list of items, each non-empty (no "a,,b", no trailing comma).
 * *items is a NULL-terminated array of strings, freed with opt_list_free. */
bool opt_split(const char *name, const char *s, char ***items, size_t *count);
void opt_list_free(char **items);

/* A comma-separated list of integers, each in [lo, hi]; *out is malloc'ed. */
bool opt_i64_list(const char *name, const char *s, int64_t lo, int64_t hi, int64_t **out,
                  size_t *count);

/* "MxK" (e.g. "4608x1024"), each factor in [1, hi]. */
bool opt_shape(const char *name, const char *s, int64_t hi, int64_t *m, int64_t *k);

/* Environment variable `var` as an integer in [lo, hi]. Returns true with *is_set = false
 * when it is unset; an empty or unparseable value is an error (false). */
bool opt_env_i64(const char *var, int64_t lo, int64_t hi, int64_t *out, bool *is_set);

/* A comma-separated list of weight type names (qmm_type_from_name; f32 .. q6_K, no q8_K), each
 * at most once, into types[0 .. *count - 1] (at most `max`). */
bool opt_weight_types(const char *name, const char *s, qmm_type *types, int max, int *count);

/* Check now that `path` (the value of flag `name`) can be written, so a long run does not
 * fail only at its end: the file is created (truncated) and closed. */
bool opt_writable_file(const char *name, const char *path);

#endif /* QMM_TOOL_OPTS_H */
