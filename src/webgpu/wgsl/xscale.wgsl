// xscale.wgsl — the shift of each X row of a dispatch (common.wgsl: scaling), run before
// the fused kernel over the same tokens: S[t] = x_shift_of(the largest |x| of token t's row,
// as the largest of the bit patterns with the sign cleared), so nothing here is
// floating-point arithmetic. One workgroup per token (a grid of at most
// maxComputeWorkgroupsPerDimension workgroups walks the tokens).

const XS_THREADS: u32 = 256u;
var<workgroup> xs_max: array<u32, XS_THREADS>;

@compute @workgroup_size(XS_THREADS, 1, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    for (var t = wid.x; t < P.n; t += nwg.x) {
        let base = P.x_off + t * P.ldx;
        var mx = 0u;
        for (var e = lid.x; e < P.k; e += XS_THREADS) {
            mx = max(mx, X[base + e] & 0x7FFFFFFFu);
        }
        xs_max[lid.x] = mx;
        workgroupBarrier();
        for (var s = XS_THREADS / 2u; s > 0u; s = s / 2u) {
            if (lid.x < s) {
                xs_max[lid.x] = max(xs_max[lid.x], xs_max[lid.x + s]);
            }
            workgroupBarrier();
        }
        if (lid.x == 0u) {
            let sh = x_shift_of(xs_max[0]);
            S[t] = sh;
        }
        workgroupBarrier();
    }
}
