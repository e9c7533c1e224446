/*
 * candidate_nvrtc.c — compile a candidate kernel with NVRTC (candidate.h).
 *
 * NVRTC compiles device code only and ships no C library headers, while the production
 * decoders (src/cuda/dequant.cuh) include <stdint.h>, qmm.h (which includes <stdbool.h>,
 * <stddef.h>) and the unit codecs (src/formats/type_list.h -> codec*.h: <stdbool.h>,
 * <stdint.h>, <stddef.h> for offsetof). So the program gets three small in-memory headers
 * with the LP64 definitions the host compiler uses (int64_t = long, size_t = unsigned long:
 * the kernel's arguments have the layout the host passes; offsetof as a constant expression
 * through EDG's __INTADDR__, since NVRTC knows no __builtin_offsetof), and
 * -default-device, so the host function declarations of qmm.h and the codecs' host-side
 * tables and layouts (never used from device code) compile as device declarations. A codec
 * that included any other C header would need it added here. Include paths:
 * the candidate's own directory, then the source tree's src/ and include/ (QMM_SOURCE_DIR,
 * default: the tree this qmm was built from).
 *
 * Options: -std=c++20 (the codecs' layout objects use designated initializers, which NVRTC
 * accepts from C++20 on), --gpu-architecture=<arch> (a real architecture: the cubin is loaded
 * as is, no PTX JIT), -DQMM_CANDIDATE_TYPE=<qmm_type id>, -DQMM_CANDIDATE_TOKENS=8. NVRTC's
 * defaults otherwise (as nvcc's: -fmad=true, no fast math).
 */
#ifdef QMM_WITH_CUDA

#include <libgen.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"

static const char k_stdint_h[] =
    "#pragma once\n"
    "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\n"
    "typedef long int64_t;\ntypedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\ntypedef unsigned long uint64_t;\n"
    "typedef long intptr_t;\ntypedef unsigned long uintptr_t;\n"
    "#define INT8_MIN (-128)\n#define INT8_MAX 127\n#define UINT8_MAX 255\n"
    "#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n#define UINT16_MAX 65535\n"
    "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
    "#define UINT32_MAX 4294967295u\n#define INT64_MIN (-9223372036854775807L - 1)\n"
    "#define INT64_MAX 9223372036854775807L\n#define UINT64_MAX 18446744073709551615UL\n";
static const char k_stddef_h[] =
    "#pragma once\ntypedef unsigned long size_t;\ntypedef long ptrdiff_t;\n"
    "#ifndef NULL\n#define NULL 0\n#endif\n"
    "#define offsetof(t, m) ((size_t)__INTADDR__(&(((t *)0)->m)))\n";
static const char k_stdbool_h[] = "#pragma once\n/* C++: bool, true and false are keywords */\n";

void candidate_image_free(candidate_image *img) {
    free(img->cubin);
    free(img->log);
    memset(img, 0, sizeof *img);
}

static bool nvrtc_ok(nvrtcResult r, const char *what) {
    if (r == NVRTC_SUCCESS) return true;
    fprintf(stderr, "qmm bench: --candidate: %s: %s\n", what, nvrtcGetErrorString(r));
    return false;
}

bool candidate_compile(const candidate_opts *o, qmm_type type, const char *arch,
                       candidate_image *img) {
    memset(img, 0, sizeof *img);
    char *path_copy = strdup(o->path);
    if (path_copy == NULL) return false;
    char opt_arch[64], opt_type[64], opt_tokens[64], inc_self[4200], inc_src[4200],
        inc_api[4200], inc_cuda[4200];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
    snprintf(opt_type, sizeof opt_type, "-DQMM_CANDIDATE_TYPE=%d", (int)type);
    snprintf(opt_tokens, sizeof opt_tokens, "-DQMM_CANDIDATE_TOKENS=%d", CANDIDATE_TOKENS);
    snprintf(inc_self, sizeof inc_self, "-I%s", dirname(path_copy));
    snprintf(inc_src, sizeof inc_src, "-I%s/src", o->source_dir);
    snprintf(inc_api, sizeof inc_api, "-I%s/include", o->source_dir);
#ifdef QMM_CANDIDATE_CUDA_INCLUDE
    snprintf(inc_cuda, sizeof inc_cuda, "-I%s", QMM_CANDIDATE_CUDA_INCLUDE); /* cuda_fp16.h */
#else
    snprintf(inc_cuda, sizeof inc_cuda, "-I/usr/local/cuda/include");
#endif
    const char *opts[] = {opt_arch, "-std=c++20", "-default-device", opt_type, opt_tokens,
                          inc_self, inc_src, inc_api, inc_cuda};
    const char *headers[] = {k_stdint_h, k_stddef_h, k_stdbool_h};
    const char *header_names[] = {"stdint.h", "stddef.h", "stdbool.h"};

    nvrtcProgram prog;
    bool ok = nvrtc_ok(nvrtcCreateProgram(&prog, o->source, o->path, 3, headers, header_names),
                       "nvrtcCreateProgram");
    free(path_copy);
    if (!ok) return false;
    const nvrtcResult cr = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t log_bytes = 0;
    if (nvrtcGetProgramLogSize(prog, &log_bytes) == NVRTC_SUCCESS && log_bytes > 0 &&
        (img->log = malloc(log_bytes)) != NULL &&
        nvrtcGetProgramLog(prog, img->log) != NVRTC_SUCCESS)
        img->log[0] = '\0';
    if (cr != NVRTC_SUCCESS) {
        fprintf(stderr, "qmm bench: --candidate: '%s' does not compile for %s (type %s, NVRTC: "
                        "%s); headers are searched in %s/src and %s/include (QMM_SOURCE_DIR). "
                        "NVRTC log:\n%s\n",
                o->path, arch, qmm_type_name(type), nvrtcGetErrorString(cr), o->source_dir,
                o->source_dir, img->log ? img->log : "(none)");
        ok = false;
    } else {
        ok = nvrtc_ok(nvrtcGetCUBINSize(prog, &img->cubin_bytes), "nvrtcGetCUBINSize");
        if (ok && (img->cubin = malloc(img->cubin_bytes)) == NULL) ok = false;
        if (ok) ok = nvrtc_ok(nvrtcGetCUBIN(prog, (char *)img->cubin), "nvrtcGetCUBIN");
    }
    nvrtcDestroyProgram(&prog);
    if (!ok) candidate_image_free(img);
    return ok;
}

#else
typedef int candidate_nvrtc_unused; /* built without CUDA: nothing here (ISO C: no empty file) */
#endif
