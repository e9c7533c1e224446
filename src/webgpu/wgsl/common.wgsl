// common.wgsl — what every kernel shares: the bindings and parameter block (the layout of
// qmm_wgpu_params in src/webgpu/webgpu_internal.h; the codebook table G of the grid types),
// byte reads from the u32 words of the raw GGUF rows, and the 8-element unit every type
// decoder returns.
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
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(0) @binding(0) var<storage, read> W: array<u32>;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> Y: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
// The grid i-quants' codebooks (types/iqgrids.wgsl says where each table is).
@group(0) @binding(4) var<storage, read> G: array<u32>;

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

// The binary16 at an even byte address b, as f32 (exact: every f16 is an f32).
fn w_f16(b: u32) -> f32 {
    return unpack2x16float(w_u16(b)).x;
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
