/* backends.c — which backends this build has. The CUDA backend defines its own accessor. */
#include "core/internal.h"

#ifndef QMM_WITH_CUDA
const qmm_backend_ops *qmm_cuda_backend_ops(void) { return NULL; }
#endif
