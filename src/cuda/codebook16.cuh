/*
 * codebook16.cuh — fast unit decoders (qmm_cuda_part) of the 16-entry-codebook types: every
 * element is S * (float)codebook[q], q a 4-bit index, S one float scale per sub-block of 16
 * or 32 elements, the codebook 16 int8 values:
 *   iq4_nl  32-element blocks, f16 d, qs[16] (element j low nibble of qs[j], j+16 high); S = d
 *   iq4_xs  256-element super-blocks, sub-blocks of 32 (nibbles as iq4_nl within one);
 *           S = d * (ls - 32), ls the 6-bit sub-block scale (codec_iq4.h)
 *   mxfp4   32-element blocks of 17 bytes, E8M0 e, qs[16] as iq4_nl; S = 2^(e-128) (ggml's
 *           ggml_e8m0_to_fp32_half: 2^-128 and 2^-127 for e = 0, 1; never NaN)
 *   nvfp4   64-element blocks, 4 UE4M3 scales d[s] for 16 elements each, qs[32]; element
 *           16s + j low nibble of qs[8s + j], 16s + 8 + j high; S = ggml_ue4m3_to_fp32(d[s])
 *           (0 for 0x00 and 0x7F, else the E4M3 value times 0.5)
 *   (mxfp4 and nvfp4: codebook E2M1 doubled, 0 1 2 3 4 6 8 12 and their negatives)
 * Authorities: ggml-quants.c dequantize_row_* and gguf.quants, whose value is d * v rounded
 * once in f32, S exact in f32. Any bit-exact codec computes that product, so these decoders
 * equal the type's unit codec (formats/codec_*.h) bit for bit; test_dequantize_bit_exact
 * checks it on the GPU (the dequantize kernel runs qmm_cuda_part), tests/test_cuda_layout
 * on the host.
 *
 * A unit is 16 elements: 8 bytes of nibbles (two 32-bit words) of one sub-block, their 8 low
 * nibbles (calls c = 0..7) then their 8 high nibbles (c = 8..15). The codebook sits in four
 * registers as biased bytes v + 128; one word of 8 nibbles is looked up by 6 byte
 * permutations (PRMT; ggml's get_int_from_table_16), and each biased byte becomes (v) * 2^p
 * exactly by the field trick of qmm_cuda_field (off 128, p = 0 or 8 in its 16-bit half): per
 * element one LOP3, one FADD and one FMUL by S * 2^-p (exact: S is 0 or >= 2^-128 here), no
 * I2F and no table load from memory. The product is the same real number as S * v, so the
 * same float.
 *
 * Byte loads: iq4_nl 2-byte loads (18-byte blocks), mxfp4 byte loads (17-byte blocks),
 * nvfp4 4-byte (36-byte blocks), iq4_xs 8-byte (136-byte blocks); rows start at
 * row * row_bytes of a cudaMalloc base, as everywhere in qmm_cuda_part.
 *
 * This file names its four types (a kernel file); a unit-codec type without an entry here
 * takes the generic decoder of dequant.cuh.
 */
#ifndef QMM_CUDA_CODEBOOK16_CUH
#define QMM_CUDA_CODEBOOK16_CUH

/* The fast decoder's description of type T: none (fast = false) unless specialized below. */
template <int T> struct qmm_cuda_cb16 { static constexpr bool fast = false; };

/* Four codebook entries as one word of biased bytes (v + 128), entry a in the low byte. */
__host__ __device__ constexpr uint32_t qmm_cuda_cb16_word(int a, int b, int c, int d) {
    return (uint32_t)(a + 128) | ((uint32_t)(b + 128) << 8) | ((uint32_t)(c + 128) << 16) |
           ((uint32_t)(d + 128) << 24);
}

/* Lane maps of the 16-element units (gemv.cu, gemv_pos; element e of a 512-element warp
 * step is call c of unit `lane`), and base(ui): the first element of unit ui of a block,
 * kHi: the offset of its high-nibble elements from its low-nibble ones. */
struct qmm_cuda_map_split32 { /* sub-blocks of 32: unit = (sub-block, half of its 16 bytes) */
    static constexpr int kHi = 16;
    static __host__ __device__ __forceinline__ int base(int ui) { return 32 * (ui >> 1) + 8 * (ui & 1); }
    static __host__ __device__ __forceinline__ int lane(int e) { return 2 * (e >> 5) + ((e >> 3) & 1); }
    static __host__ __device__ __forceinline__ int call(int e) { return 8 * ((e >> 4) & 1) + (e & 7); }
};
struct qmm_cuda_map_run16 { /* sub-blocks of 16: unit = one sub-block, 16 consecutive elements */
    static constexpr int kHi = 8;
    static __host__ __device__ __forceinline__ int base(int ui) { return 16 * ui; }
    static __host__ __device__ __forceinline__ int lane(int e) { return e >> 4; }
    static __host__ __device__ __forceinline__ int call(int e) { return e & 15; }
};

/* iq4_nl: unit ui = qs bytes 8ui..8ui+7; S = d. */
template <> struct qmm_cuda_cb16<QMM_TYPE_IQ4_NL> {
    static constexpr bool fast = true;
    static constexpr int qk = QK4_NL, bytes = (int)sizeof(block_iq4_nl);
    typedef qmm_cuda_map_split32 map;
    static constexpr uint32_t t0 = qmm_cuda_cb16_word(-127, -104, -83, -65), t1 = qmm_cuda_cb16_word(-49, -35, -22, -10),
                              t2 = qmm_cuda_cb16_word(1, 13, 25, 38), t3 = qmm_cuda_cb16_word(53, 69, 89, 113);
    static __device__ __forceinline__ float load(const uint8_t *b, int ui, uint32_t &q0, uint32_t &q1) {
        const uint8_t *qs = b + 2 + 8 * ui; /* 2-byte aligned */
        q0 = (uint32_t)qmm_cuda_ld16(qs) | ((uint32_t)qmm_cuda_ld16(qs + 2) << 16);
        q1 = (uint32_t)qmm_cuda_ld16(qs + 4) | ((uint32_t)qmm_cuda_ld16(qs + 6) << 16);
        return qmm_cuda_h2f_scale(qmm_cuda_ld16(b));
    }
};

/* iq4_xs: unit ui = half ui & 1 of sub-block ib = ui >> 1 (qs bytes 16ib + 8(ui & 1) ..);
 * S = d * (ls - 32), ls = bits 4ib..4ib+3 of the word scales_l | bits 2ib, 2ib+1 of scales_h
 * << 4. Offsets: d 0, scales_h 2, scales_l 4, qs 8; blocks 8-byte aligned. */
template <> struct qmm_cuda_cb16<QMM_TYPE_IQ4_XS> {
    static constexpr bool fast = true;
    static constexpr int qk = QK_K, bytes = (int)sizeof(block_iq4_xs);
    typedef qmm_cuda_map_split32 map;
    static constexpr uint32_t t0 = qmm_cuda_cb16<QMM_TYPE_IQ4_NL>::t0, t1 = qmm_cuda_cb16<QMM_TYPE_IQ4_NL>::t1,
                              t2 = qmm_cuda_cb16<QMM_TYPE_IQ4_NL>::t2, t3 = qmm_cuda_cb16<QMM_TYPE_IQ4_NL>::t3;
    static __device__ __forceinline__ float load(const uint8_t *b, int ui, uint32_t &q0, uint32_t &q1) {
        const int ib = ui >> 1;
        const uint2 head = *(const uint2 *)b; /* d | scales_h << 16, scales_l */
        const uint2 qs = *(const uint2 *)(b + 8 + 8 * ui);
        q0 = qs.x;
        q1 = qs.y;
        const uint32_t ls = ((head.y >> (4 * ib)) & 0xFu) | (((head.x >> (16 + 2 * ib)) & 3u) << 4);
        /* (float)(ls - 32) exactly (qmm_cuda_field, p = 0), then d * it rounded once */
        return __fmul_rn(qmm_cuda_h2f_scale((uint16_t)head.x), qmm_cuda_field(ls, 0, 32));
    }
};

/* mxfp4: unit ui = qs bytes 8ui..8ui+7 (offset 1: byte loads); S = 2^(e-128). */
template <> struct qmm_cuda_cb16<QMM_TYPE_MXFP4> {
    static constexpr bool fast = true;
    static constexpr int qk = QK_MXFP4, bytes = (int)sizeof(block_mxfp4);
    typedef qmm_cuda_map_split32 map;
    static constexpr uint32_t t0 = qmm_cuda_cb16_word(0, 1, 2, 3), t1 = qmm_cuda_cb16_word(4, 6, 8, 12),
                              t2 = qmm_cuda_cb16_word(0, -1, -2, -3), t3 = qmm_cuda_cb16_word(-4, -6, -8, -12);
    static __device__ __forceinline__ float load(const uint8_t *b, int ui, uint32_t &q0, uint32_t &q1) {
        const uint8_t *qs = b + 1 + 8 * ui;
        q0 = (uint32_t)qs[0] | ((uint32_t)qs[1] << 8) | ((uint32_t)qs[2] << 16) | ((uint32_t)qs[3] << 24);
        q1 = (uint32_t)qs[4] | ((uint32_t)qs[5] << 8) | ((uint32_t)qs[6] << 16) | ((uint32_t)qs[7] << 24);
        const uint32_t e = b[0];
        return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
    }
};

/* nvfp4: unit ui = sub-block ui (qs bytes 8ui..8ui+7 at offset 4, 4-byte aligned); S =
 * UE4M3 d[ui] * 0.5: 0 for 0x00 and 0x7F; exponent field 0: man * 2^-10; else (1 + man/8) *
 * 2^(exp - 8) (bit 7 ignored, so 0xFF gives 240). */
template <> struct qmm_cuda_cb16<QMM_TYPE_NVFP4> {
    static constexpr bool fast = true;
    static constexpr int qk = QK_NVFP4, bytes = (int)sizeof(block_nvfp4);
    typedef qmm_cuda_map_run16 map;
    static constexpr uint32_t t0 = qmm_cuda_cb16<QMM_TYPE_MXFP4>::t0, t1 = qmm_cuda_cb16<QMM_TYPE_MXFP4>::t1,
                              t2 = qmm_cuda_cb16<QMM_TYPE_MXFP4>::t2, t3 = qmm_cuda_cb16<QMM_TYPE_MXFP4>::t3;
    static __device__ __forceinline__ float load(const uint8_t *b, int ui, uint32_t &q0, uint32_t &q1) {
        q0 = *(const uint32_t *)(b + 4 + 8 * ui);
        q1 = *(const uint32_t *)(b + 8 + 8 * ui);
        const uint32_t x = b[ui], ex = (x >> 3) & 0xFu, man = x & 7u;
        const float s = ex == 0 ? __fmul_rn((float)man, 0x1p-10f) : __uint_as_float(((ex + 119u) << 23) | (man << 20));
        return x == 0 || x == 0x7Fu ? 0.0f : s;
    }
};

/* The biased codebook values of the 8 nibbles of q (byte n of lo: nibble n, byte n of hi:
 * nibble 4 + n): __byte_perm picks by the low 3 bits of each of the selector's 4 low nibbles
 * (it masks the selector with 0x7777 before the PRMT, so bit 3 never turns on PRMT's
 * sign-replication mode), from t0:t1 (entries 0..7) and from t2:t3 (entries 8..15); then bit
 * 3 of each index picks between the two. */
__device__ __forceinline__ void qmm_cuda_cb16_lookup(uint32_t q, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3,
                                                     uint32_t &lo, uint32_t &hi) {
    const uint32_t sel = ((q & 0x88888888u) >> 1) | 0x32103210u;
    lo = __byte_perm(__byte_perm(t0, t1, q), __byte_perm(t2, t3, q), sel);
    const uint32_t q16 = q >> 16;
    hi = __byte_perm(__byte_perm(t0, t1, q16), __byte_perm(t2, t3, q16), sel >> 16);
}

/* The unit decoder (qmm_cuda_part<T> for the types above; interface in dequant.cuh): 16
 * elements per unit, units of a block consecutive. f is called for c = 0..15: elements
 * base(ui) + c (c < 8, low nibbles of the unit's bytes 0..7) and base(ui) + kHi + c - 8. */
template <int T> struct qmm_cuda_part_cb16 {
    typedef qmm_cuda_cb16<T> S;
    static constexpr int kUnit = 16, kUnits = S::qk / kUnit; /* elements per unit, units per block */
    static_assert(S::qk % kUnit == 0, "whole units per block");
    static __host__ __device__ __forceinline__ int64_t units(int64_t k) { return k / kUnit; }
    template <class F> static __device__ __forceinline__ void decode(const uint8_t *row, int64_t u, int64_t, F f) {
        const uint64_t blk = (uint64_t)u / kUnits;
        const int ui = (int)((uint64_t)u % kUnits);
        uint32_t q[2];
        const float s = S::load(row + blk * S::bytes, ui, q[0], q[1]);
        const float s8 = qmm_cuda_scale_p(s, 8);
        /* v[w][h]: biased values of word w's nibbles 4h..4h+3 = low, high nibble of its bytes
         * 2h and 2h + 1 (byte order: lo(2h), hi(2h), lo(2h+1), hi(2h+1)) */
        uint32_t v[2][2];
#pragma unroll
        for (int w = 0; w < 2; w++) qmm_cuda_cb16_lookup(q[w], S::t0, S::t1, S::t2, S::t3, v[w][0], v[w][1]);
        const int64_t e0 = (int64_t)blk * S::qk + S::map::base(ui);
#pragma unroll
        for (int c = 0; c < kUnit; c++) {
            const int hi = c >> 3, w = (c & 7) >> 2, i = c & 3; /* byte i of word w, nibble hi */
            const uint32_t word = v[w][i >> 1];
            const uint32_t half = (i & 1) ? word >> 16 : word; /* its value at bit p = 8 * hi */
            const int p = 8 * hi;
            f(e0 + (hi ? S::map::kHi : 0) + (c & 7),
              __fmul_rn(qmm_cuda_field(half & (0xFFu << p), p, 128), hi ? s8 : s));
        }
    }
};

#endif /* QMM_CUDA_CODEBOOK16_CUH */
