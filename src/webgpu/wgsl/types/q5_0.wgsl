// q5_0: 22-byte blocks of 32: f16 d, u32 qh (bit j: bit 4 of element j), 16 bytes qs
// (nibbles as q4_0); value (q - 16) * d.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 22u;
    let d = w_f16(b);
    let qh = w_u32(b + 2u);
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 6u + (j & 15u);
    let lo = fields4(w_u32(q), sh, 4u) | (bits4(qh, j) << vec4<u32>(4u));
    let hi = fields4(w_u32(q + 4u), sh, 4u) | (bits4(qh, j + 4u) << vec4<u32>(4u));
    return W8((vec4<f32>(lo) - 16.0) * d, (vec4<f32>(hi) - 16.0) * d);
}
