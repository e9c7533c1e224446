// tq2_0: 66-byte super-blocks of 256: qs[64] (2 bits per trit), f16 d at 64. Element
// 128c + 32l + m is bits 2l of qs[32c + m]; value (t - 1) * d (the pair 3 gives 2d, as ggml).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 66u;
    let i = e & 255u;
    let c = i >> 7u;
    let l = (i >> 5u) & 3u;
    let d = w_f16(b + 64u);
    let q = b + 32u * c + (i & 31u);
    return W8((vec4<f32>(fields4(w_u32(q), 2u * l, 2u)) - 1.0) * d,
              (vec4<f32>(fields4(w_u32(q + 4u), 2u * l, 2u)) - 1.0) * d);
}
