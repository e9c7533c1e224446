// q5_1: 24-byte blocks of 32: f16 d, f16 m, u32 qh, 16 bytes qs; value q * d + m.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 24u;
    let d = w_f16(b);
    let m = w_f16(b + 2u);
    let qh = w_u32(b + 4u);
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 8u + (j & 15u);
    let lo = fields4(w_u32(q), sh, 4u) | (bits4(qh, j) << vec4<u32>(4u));
    let hi = fields4(w_u32(q + 4u), sh, 4u) | (bits4(qh, j + 4u) << vec4<u32>(4u));
    return W8(vec4<f32>(lo) * d + m, vec4<f32>(hi) * d + m);
}
