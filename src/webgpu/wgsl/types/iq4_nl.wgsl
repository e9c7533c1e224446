// iq4_nl: 18-byte blocks of 32 as q4_0 (f16 d, nibbles: element j low nibble of qs[j], j + 16
// high); value d * values[q] (codebook16.wgsl CB_IQ4).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 18u;
    let d = w_f16(b);
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 2u + (j & 15u);
    return W8(cb16x4(CB_IQ4, fields4(w_u32(q), sh, 4u)) * d,
              cb16x4(CB_IQ4, fields4(w_u32(q + 4u), sh, 4u)) * d);
}
