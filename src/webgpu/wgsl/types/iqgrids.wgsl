// iqgrids.wgsl — the grid i-quants' tables in the storage buffer G (binding 4), laid out by
// src/webgpu/grids.c from src/formats/iq_grids.h (ggml's tables): word offsets below. A
// 64-bit grid entry j is words (2j, 2j + 1) of its table (element b in byte b); a 32-bit one
// word j; ksigns_iq2xs[i] byte i % 4 of word i / 4.
const G_KSIGNS: u32 = 0u;     // 128 bytes
const G_IQ2XXS: u32 = 32u;    // 256 x u64
const G_IQ2XS: u32 = 544u;    // 512 x u64
const G_IQ2S: u32 = 1568u;    // 1024 x u64
const G_IQ3XXS: u32 = 3616u;  // 256 x u32
const G_IQ3S: u32 = 3872u;    // 512 x u32
const G_IQ1S: u32 = 4384u;    // 2048 x u64

fn ksign(i: u32) -> u32 {
    return extractBits(G[G_KSIGNS + (i >> 2u)], (i & 3u) * 8u, 8u);
}

// Sign factors of bits j0 .. j0+3 of s: -1 where set, else 1 (exact).
fn signs4(s: u32, j0: u32) -> vec4<f32> {
    return vec4<f32>(1.0) - 2.0 * vec4<f32>(bits4(s, j0));
}

// The 2-bit grids: 8 magnitudes of entry `word` (two words at G[word]) times db, signed:
// (db * magnitude) * sign, both products exact.
fn iq2_group(word: u32, signs: u32, db: f32) -> W8 {
    return W8((vec4<f32>(fields4(G[word], 0u, 8u)) * db) * signs4(signs, 0u),
              (vec4<f32>(fields4(G[word + 1u], 0u, 8u)) * db) * signs4(signs, 4u));
}

// (d * (0.5 + ls)) * 0.25 (exact).
fn iq2_db(d: f32, ls: u32) -> f32 {
    return (d * (0.5 + f32(ls))) * 0.25;
}

// The ternary grid of iq1_s / iq1_m: 8 int8 values in {-1, 0, 1} of entry `word`, plus delta,
// times dl: dl * (grid + delta) (both exact).
fn iq1_group(word: u32, delta: f32, dl: f32) -> W8 {
    let w0 = bitcast<i32>(G[word]);
    let w1 = bitcast<i32>(G[word + 1u]);
    let lo = vec4<f32>(vec4<i32>(extractBits(w0, 0u, 8u), extractBits(w0, 8u, 8u), extractBits(w0, 16u, 8u),
                                 extractBits(w0, 24u, 8u)));
    let hi = vec4<f32>(vec4<i32>(extractBits(w1, 0u, 8u), extractBits(w1, 8u, 8u), extractBits(w1, 16u, 8u),
                                 extractBits(w1, 24u, 8u)));
    return W8((lo + delta) * dl, (hi + delta) * dl);
}
