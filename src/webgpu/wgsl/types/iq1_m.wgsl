// iq1_m: 56-byte super-blocks of 256: qs[32], qh[16] at 32, scales[8] at 48 (a u64 sc whose
// four top nibbles of its 16-bit quarters hold the f16 d). Unit u (ib = u / 4, l = u % 4):
// scale s = 3 bits of sc at 16 (ib / 2) + 6 (ib % 2) + 3 (l / 2), dl = d * (2 s + 1); qh =
// qh[2 ib + l / 2] >> 4 (l % 2); grid index qs[u] | ((qh & 7) << 8), delta -0.125 when qh & 8;
// value dl * (grid + delta) (iq1_group, iqgrids.wgsl).
fn qmm_dec8(rb: u32, e: u32) -> W8 {
    let b = rb + (e >> 8u) * 56u;
    let u = (e & 255u) >> 3u;
    let ib = u >> 2u;
    let l = u & 3u;
    let s0 = w_u32(b + 48u);
    let s1 = w_u32(b + 52u);
    let h = ((s0 >> 12u) & 0xFu) | ((s0 >> 24u) & 0xF0u) | ((s1 >> 4u) & 0xF00u) | ((s1 >> 16u) & 0xF000u);
    let sh = 16u * (ib >> 1u) + 6u * (ib & 1u) + 3u * (l >> 1u);
    let s = extractBits(select(s1, s0, sh < 32u), sh & 31u, 3u);
    let dl = f16_exact(h) * f32(2u * s + 1u);
    let qh = w_u8(b + 32u + 2u * ib + (l >> 1u)) >> (4u * (l & 1u));
    let idx = w_u8(b + u) | ((qh & 7u) << 8u);
    let delta = select(0.125, -0.125, (qh & 8u) != 0u);
    return iq1_group(G_IQ1S + 2u * idx, delta, dl);
}
