// common.wgsl — what every kernel shares: the bindings and parameter block (the layout of
// qmm_wgpu_params in src/webgpu/webgpu_internal.h; the codebook table G of the grid types),
// byte reads from the u32 words of the raw GGUF rows, the 8-element unit every type
// decoder returns, and the power-of-two scaling that keeps subnormal values exact on devices
// that flush f32 subnormals (WGSL allows it; NVIDIA's Vulkan driver does).
//
// X and Y are read and written as u32 bits (a load or store of bits flushes nothing).
// Scaling: S[t] (xscale.wgsl, run before the fused kernel over the same tokens; gemv.wgsl
// finds its tokens' shifts itself, by the same rule: x_shift_of) and R[r] (the
// weights' row shifts, weights.c) are 0 unless token t's largest |x|, or row r's largest
// |w|, is below 2^-40; then that X row is read multiplied by 2^S[t] and W row r was uploaded
// multiplied by 2^R[r] (both exact: no element leaves the normal range), and the output is
// stored multiplied by 2^-(S[t] + R[r]), rounded once to nearest even (subnormal outputs
// included). With both 0 every load and store is the plain value.
//
// W rows start on 4-byte boundaries (row_words words apart); blocks inside a row sit at any
// byte offset (an 18-byte q4_0 block at 18 b), so fields are read by byte address and
// assembled from whole words with integer operations. Every weights buffer ends in 32 bytes
// of zero padding, so the second word of a read at the end of a row exists.

struct Params {
    rows: u32,      // W rows of this dispatch
    k: u32,
    n: u32,         // tokens of this dispatch
    row_words: u32, // u32 words between W rows
    ldx: u32,
    ldy: u32,
    x_off: u32,     // element of X where token 0 of this dispatch starts
    y_off: u32,     // element of Y of token 0, row 0 of this dispatch
    w_row0: u32,    // first W row of this dispatch in the W binding
    r_off: u32,     // index in R of row 0 of this dispatch
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> Y: array<u32>;
@group(0) @binding(3) var<uniform> P: Params;
// The grid i-quants' codebooks (types/iqgrids.wgsl says where each table is).
@group(0) @binding(4) var<storage, read> G: array<u32>;
// Per token of this dispatch, the shift of its X row (written by xscale.wgsl).
@group(0) @binding(5) var<storage, read_write> S: array<i32>;
// Per row of the weights, the shift its row was uploaded with.
@group(0) @binding(6) var<storage, read> R: array<i32>;

// x (bits b) times 2^s, s > 0, exact: s > 0 only for rows whose largest |x| is below
// 2^-40, so s >= 41 and every element, subnormal ones included, lands in the normal range.
// A subnormal a 2^-149 is (1 + a 2^-23) - 1 (exact) times 2^(s - 126); a normal x is
// multiplied by 2^s (s <= 126 when the row has a normal element). No operand is subnormal.
fn x_scaled(b: u32, s: i32) -> f32 {
    let a = b & 0x7FFFFFFFu;
    if (a < 0x00800000u) {
        let v = (bitcast<f32>(a | 0x3F800000u) - 1.0) * bitcast<f32>(u32(s + 1) << 23u);
        return bitcast<f32>(bitcast<u32>(v) | (b & 0x80000000u));
    }
    return bitcast<f32>(b) * bitcast<f32>(u32(min(s, 126) + 127) << 23u);
}

// The shift of an X row whose largest element bits with the sign cleared are a: 0, unless
// a is finite, nonzero and below 2^-40; then -ilogb (the row times 2^shift has its largest
// |x| in [1, 2)). Integer operations only (the bits' order is the magnitudes' order).
fn x_shift_of(a: u32) -> i32 {
    if (a == 0u || a >= 0x2B800000u) { // 0x2B800000 = 2^-40; Inf and NaN are above it
        return 0;
    }
    if (a >= 0x00800000u) {
        return 127 - i32(a >> 23u);
    }
    return 149 - i32(firstLeadingBit(a));
}
// The bits of X elements e .. e+7 (e % 8 == 0, e < k) of a row, at X words i .. i+7.
struct X8 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}
// Elements at or past k read as 0 and their words are not read: in a float type's k tail
// they are not the row's, and past the last row they may lie past the X binding (every
// index a kernel forms is in range: docs/WEBGPU.md, "Shader checks").
fn x_bits8(i: u32, e: u32) -> X8 {
    if (e + 8u <= P.k) {
        return X8(vec4<u32>(X[i], X[i + 1u], X[i + 2u], X[i + 3u]),
                  vec4<u32>(X[i + 4u], X[i + 5u], X[i + 6u], X[i + 7u]));
    }
    var v = array<u32, 8>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
    for (var j = 0u; j < 8u; j++) {
        if (e + j < P.k) {
            v[j] = X[i + j];
        }
    }
    return X8(vec4<u32>(v[0], v[1], v[2], v[3]), vec4<u32>(v[4], v[5], v[6], v[7]));
}
// Four X elements' bits as f32, times 2^s when s != 0 (x_scaled).
fn x_f32x4(b: vec4<u32>, s: i32) -> vec4<f32> {
    if (s == 0) {
        return bitcast<vec4<f32>>(b);
    }
    return vec4<f32>(x_scaled(b.x, s), x_scaled(b.y, s), x_scaled(b.z, s), x_scaled(b.w, s));
}

// The bits of v * 2^-e (e >= 0), rounded to nearest even once, subnormal results included
// (v is an f32 result of the kernel's arithmetic: zero, normal, Inf or NaN).
fn y_bits(v: f32, e: i32) -> u32 {
    let b = bitcast<u32>(v);
    let a = b & 0x7FFFFFFFu;
    if (e == 0 || a == 0u || a >= 0x7F800000u) {
        return b;
    }
    let sign = b & 0x80000000u;
    let ex = i32(a >> 23u) - e;
    if (ex >= 1) {
        return sign | (u32(ex) << 23u) | (a & 0x007FFFFFu);
    }
    let sh = u32(1 - ex); // >= 1: the result is subnormal or rounds to zero or to 2^-126
    if (sh > 25u) {
        return sign;
    }
    let man = (a & 0x007FFFFFu) | 0x00800000u;
    var q = man >> sh;
    let rem = man & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (q & 1u) == 1u)) {
        q = q + 1u;
    }
    return sign | q;
}

// Output (row r of this dispatch, X row shift s) at Y element idx: Y's bits for the f32 sum acc.
fn y_store_shift(idx: u32, s: i32, r: u32, acc: f32) {
    Y[idx] = y_bits(acc, s + R[P.r_off + r]);
}
// Output (token t, row r) of this dispatch, its shift from S.
fn y_store(idx: u32, t: u32, r: u32, acc: f32) {
    y_store_shift(idx, S[t], r, acc);
}

// Elements e .. e+7 of a W row: lo = e .. e+3, hi = e+4 .. e+7.
struct W8 {
    lo: vec4<f32>,
    hi: vec4<f32>,
}

// The byte at byte address b of W.
fn w_u8(b: u32) -> u32 {
    return extractBits(W[b >> 2u], (b & 3u) * 8u, 8u);
}

// The little-endian u16 at an even byte address b.
fn w_u16(b: u32) -> u32 {
    return extractBits(W[b >> 2u], (b & 2u) * 8u, 16u);
}

// The little-endian u32 at any byte address b.
fn w_u32(b: u32) -> u32 {
    let s = (b & 3u) * 8u;
    let lo = W[b >> 2u];
    if (s == 0u) {
        return lo;
    }
    return (lo >> s) | (W[(b >> 2u) + 1u] << (32u - s));
}

// binary16 bits h (low 16 bits) as f32, exact (every f16 is a normal f32, Inf or NaN): by
// integer operations, since a device that flushes subnormals may flush the f16 subnormals
// in unpack2x16float too.
fn f16_exact(h: u32) -> f32 {
    let a = h & 0x7FFFu;
    let sign = (h & 0x8000u) << 16u;
    if (a < 0x0400u) { // zero or subnormal: a * 2^-24 (a normal f32 product)
        return bitcast<f32>(sign | bitcast<u32>(f32(a) * 5.9604644775390625e-8));
    }
    if (a >= 0x7C00u) { // Inf, NaN (payload kept)
        return bitcast<f32>(sign | 0x7F800000u | ((a & 0x03FFu) << 13u));
    }
    return bitcast<f32>(sign | ((a + 0x1C000u) << 13u));
}

// Four binary16 values (the low halves of h) as f32, exact.
fn f16_exact4(h: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(f16_exact(h.x), f16_exact(h.y), f16_exact(h.z), f16_exact(h.w));
}

// The binary16 at an even byte address b, as f32 (exact: every f16 is an f32).
fn w_f16(b: u32) -> f32 {
    return f16_exact(w_u16(b));
}

// Bits [sh, sh + cnt) of each of the four bytes of q.
fn fields4(q: u32, sh: u32, cnt: u32) -> vec4<u32> {
    return vec4<u32>(extractBits(q, sh, cnt), extractBits(q, 8u + sh, cnt),
                     extractBits(q, 16u + sh, cnt), extractBits(q, 24u + sh, cnt));
}

// The four bytes of q as signed int8 values.
fn int8x4(q: u32) -> vec4<f32> {
    let s = bitcast<i32>(q);
    return vec4<f32>(vec4<i32>(extractBits(s, 0u, 8u), extractBits(s, 8u, 8u),
                               extractBits(s, 16u, 8u), extractBits(s, 24u, 8u)));
}

// Bits b0 .. b0+3 of q (one bit each), b0 + 3 < 32.
fn bits4(q: u32, b0: u32) -> vec4<u32> {
    return (vec4<u32>(q) >> vec4<u32>(b0, b0 + 1u, b0 + 2u, b0 + 3u)) & vec4<u32>(1u);
}

// w with the elements at or beyond k set to 0 (float types, whose k need not be a multiple
// of 8: the words past the row's end belong to the next row or the padding).
fn mask8(w: W8, e: u32, k: u32) -> W8 {
    let i = vec4<u32>(e, e + 1u, e + 2u, e + 3u);
    let lo = select(vec4<f32>(0.0), w.lo, i < vec4<u32>(k));
    let hi = select(vec4<f32>(0.0), w.hi, i + vec4<u32>(4u) < vec4<u32>(k));
    return W8(lo, hi);
}

// Elements e .. e+7 of row r of this dispatch (zero for rows beyond P.rows and elements
// beyond P.k): the one entry kernels use.
fn load_w8(r: u32, e: u32) -> W8 {
    if (r >= P.rows || e >= P.k) {
        return W8(vec4<f32>(0.0), vec4<f32>(0.0));
    }
    let w = qmm_dec8((P.w_row0 + r) * P.row_words * 4u, e);
    if (e + 8u > P.k) {
        return mask8(w, e, P.k);
    }
    return w;
}
