/*
 * type_list.h — the types whose codec is a unit codec (codec.h), one row each:
 *
 *     X(ENUM, name)      QMM_TYPE_<ENUM> in qmm.h, block_<name> in blocks.h,
 *                        qmm_unit_<name> and qmm_layout_<name> in its codec_*.h
 *
 * This list is the only place such a type is named outside its enum value, block struct and
 * codec: the type table (src/core/types.c), the host dequantizers (quants_unit.c) and the CUDA
 * decoders (src/cuda/dequant.cuh) are generated from it. A reference quantizer, where one
 * exists, is named in quants.h and set in the table by qmm_quantizer_<name> (below).
 */
#ifndef QMM_FORMATS_TYPE_LIST_H
#define QMM_FORMATS_TYPE_LIST_H

#include "formats/codec_fp4.h"
#include "formats/codec_iq1.h"
#include "formats/codec_iq2.h"
#include "formats/codec_iq3.h"
#include "formats/codec_iq4.h"
#include "formats/codec_tq.h"

#define QMM_UNIT_TYPES(X)                                                                  \
    X(IQ2_XXS, iq2_xxs)                                                                    \
    X(IQ2_XS, iq2_xs)                                                                      \
    X(IQ2_S, iq2_s)                                                                        \
    X(IQ3_XXS, iq3_xxs)                                                                    \
    X(IQ3_S, iq3_s)                                                                        \
    X(IQ1_S, iq1_s)                                                                        \
    X(IQ1_M, iq1_m)                                                                        \
    X(IQ4_NL, iq4_nl)                                                                      \
    X(IQ4_XS, iq4_xs)                                                                      \
    X(TQ1_0, tq1_0)                                                                        \
    X(TQ2_0, tq2_0)                                                                        \
    X(MXFP4, mxfp4)                                                                        \
    X(NVFP4, nvfp4)

#endif /* QMM_FORMATS_TYPE_LIST_H */
