// mxfp4: 17-byte blocks of 32: E8M0 byte e, qs[16] (element j low nibble of qs[j], j + 16
// high); value kvalues[q] * 2^(e - 128) (doubled E2M1 codebook, half the scale: for e = 0, 1
// the f32 subnormals 2^-128, 2^-127). Products exact or overflowing as ggml's.
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 5u) * 17u;
    let x = w_u8(b);
    let d = bitcast<f32>(select((x - 1u) << 23u, 0x00200000u << x, x < 2u));
    let j = e & 31u;
    let sh = select(0u, 4u, j >= 16u);
    let q = b + 1u + (j & 15u);
    return W8(cb16x4(CB_E2M1, fields4(w_u32(q), sh, 4u)) * d,
              cb16x4(CB_E2M1, fields4(w_u32(q + 4u), sh, 4u)) * d);
}
