// kscale.wgsl — the 6-bit scale and min of sub-block j (0..7) of q4_K / q5_K from the 12
// bytes at byte address s: j < 4: low 6 bits of s[j] and s[j + 4]; j >= 4: the low / high
// nibble of s[j + 4] with the top 2 bits of s[j - 4] and s[j] as bits 4, 5.
fn kscale_min(s: u32, j: u32) -> vec2<u32> {
    if (j < 4u) {
        return vec2<u32>(w_u8(s + j) & 63u, w_u8(s + j + 4u) & 63u);
    }
    let c = w_u8(s + j + 4u);
    return vec2<u32>((c & 15u) | ((w_u8(s + j - 4u) >> 6u) << 4u), (c >> 4u) | ((w_u8(s + j) >> 6u) << 4u));
}
