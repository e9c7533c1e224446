/* main.c — `qmm COMMAND [options]`: dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "qmm.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: qmm COMMAND [options]\n"
            "\n"
            "Quantized (GGUF) matrix multiplication: Y[n][m] = X[n][k] * W[m][k]^T.\n"
            "\n"
            "commands:\n"
            "  bench    time and verify matmuls on model shapes or a GGUF file's weights\n"
            "  info     print a GGUF file's metadata and tensor table\n"
            "  tune     measure auto's crossovers on this machine and write a tuning file\n"
            "\n"
            "`qmm COMMAND --help` describes each command. `qmm --version` prints the version.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("qmm %s\n", qmm_version());
        return 0;
    }
    if (strcmp(cmd, "bench") == 0) return qmm_cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0) return qmm_cmd_info(argc - 1, argv + 1);
    if (strcmp(cmd, "tune") == 0) return qmm_cmd_tune(argc - 1, argv + 1);
    fprintf(stderr, "qmm: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
