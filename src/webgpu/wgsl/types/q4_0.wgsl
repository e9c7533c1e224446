// q4_0: 18-byte blocks of 32: f16 d, 16 bytes qs; element j low nibble of qs[j], j + 16 high
// nibble of qs[j]; value (q - 8) * d.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 18u;
    let d = w_f16(b);
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 2u + (j & 15u);
    return W8((vec4<f32>(fields4(w_u32(q), sh, 4u)) - 8.0) * d,
              (vec4<f32>(fields4(w_u32(q + 4u), sh, 4u)) - 8.0) * d);
}
