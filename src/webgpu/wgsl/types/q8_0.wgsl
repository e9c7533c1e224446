// q8_0: 34-byte blocks of 32: f16 d, 32 int8 q; value q * d.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 34u;
    let d = w_f16(b);
    let q = b + 2u + (e & 31u);
    return W8(int8x4(w_u32(q)) * d, int8x4(w_u32(q + 4u)) * d);
}
