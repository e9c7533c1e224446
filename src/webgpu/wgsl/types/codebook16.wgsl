// codebook16.wgsl — 16-entry int8 codebooks (iq4_nl / iq4_xs values; the doubled E2M1 values
// of mxfp4 / nvfp4), four entries per u32 word, little-endian: entry q is byte q % 4 of word
// q / 4, sign-extended. cb16x4 looks up four indices at once.
const CB_IQ4: vec4<u32> = vec4<u32>(0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u);
const CB_E2M1: vec4<u32> = vec4<u32>(0x03020100u, 0x0C080604u, 0xFDFEFF00u, 0xF4F8FAFCu);

fn cb16(cb: vec4<u32>, q: u32) -> f32 {
    let hi = q >> 2u;
    let w = select(select(cb.x, cb.y, hi == 1u), select(cb.z, cb.w, hi == 3u), hi >= 2u);
    return f32(extractBits(bitcast<i32>(w), (q & 3u) * 8u, 8u));
}

fn cb16x4(cb: vec4<u32>, q: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(cb16(cb, q.x), cb16(cb, q.y), cb16(cb, q.z), cb16(cb, q.w));
}
