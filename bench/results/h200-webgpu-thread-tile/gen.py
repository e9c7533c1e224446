# gen.py RM TN UNROLL OUT: a fused candidate whose thread holds RM x TN vec4 tiles of 4x4
import sys
RM, TN, UN, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
import os
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../src/webgpu/wgsl/fused.wgsl')).read()
head = src[:src.index('@compute')]
head = head.replace("const THREADS: u32 = WG_M * WG_N;",
  f"const TX: u32 = WG_M / {RM}u;\nconst TY: u32 = WG_N / {TN}u;\nconst THREADS: u32 = TX * TY;")
L = []
L.append("@compute @workgroup_size(TX, TY, 1)")
L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {")
L.append("    let tx = lid.x;\n    let ty = lid.y;\n    let tid = ty * TX + tx;\n    let row0 = wid.x * BM;\n    let tok0 = wid.y * BN;")
acc = lambda i, j: f"acc_{i}_{j}"
for j in range(4 * TN):
    for i in range(RM):
        L.append(f"    var {acc(i,j)} = vec4<f32>(0.0);")
# the k-loop head and both tile loads, as production has them (up to its first barrier)
k0 = src.index("    for (var k0")
L.append(src[k0:src.index("workgroupBarrier();", k0) + len("workgroupBarrier();")])
L.append(f"        for (var kk = 0u; kk < TILE_K; kk += {UN}u) {{")
for u in range(UN):
    o = f" + {u}u" if u else ""
    for i in range(RM):
        L.append(f"            let a{i}_{u} = ws[(kk{o}) * WG_M + tx + {i}u * TX];")
    for t in range(TN):
        L.append(f"            let b{t}_{u} = xs[(kk{o}) * WG_N + ty + {t}u * TY];")
    for j in range(4 * TN):
        for i in range(RM):
            L.append(f"            {acc(i,j)} += a{i}_{u} * b{j//4}_{u}.{'xyzw'[j%4]};")
L.append("        }\n        workgroupBarrier();\n    }")
for j in range(4 * TN):
    for i in range(RM):
        L.append(f"    store_row(tok0 + 4u * (ty + {j//4}u * TY) + {j%4}u, row0 + 4u * (tx + {i}u * TX), {acc(i,j)});")
L.append("}")
open(out, 'w').write(head + "\n".join(L) + "\n")
