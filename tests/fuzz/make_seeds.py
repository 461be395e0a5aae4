#!/usr/bin/env python3
"""Writes the seed corpora tests/fuzz/corpus/{api_args,jit_exec}/.

The encoding is the one the targets decode (tests/fuzz/fuzz_input.h and the
decoders in fuzz_api_args.cpp / fuzz_jit_exec.cpp); every seed is a
hand-picked call that reaches one branch of the decoders (valid calls of
each kind, each refusal, NULL and aliased pointers, packed-buffer misuse,
post-op chains, conv geometries).  Seeds must pass: inputs that reproduce a
bug go to tests/fuzz/regressions/<target>/ instead.

    tests/fuzz/make_seeds.py            rewrite both corpora
    tests/fuzz/make_seeds.py --check    only compare with the files in git
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

EDGE = [-1, -2, -2**63, 2**63 - 1, 2**63 - 2, (2**63 - 1) // 2, (2**63 - 1) // 4 + 1,
        (2**63 - 1) // 64, 2**62, 2**40, 2**40 + 1, 2**32, 2**32 + 1, 2**31 - 1, 2**31,
        3037000499, 3037000500, 2**21, 2**24, 65536, 65537, -2**31, -2**62, -2**63 + 1,
        0x7fffffffffffffc0, 1000000007, 2**30, 2**62 - 1, 256, 257, 1023, 1024, -64, 32, 33,
        0, 1, 2, 3, 4, 12, 13, 16, 31, 48, 63, 64, 65]


def u8(*v):
    return bytes(x & 0xff for x in v)


def i64(v):
    return struct.pack('<q', v)


def size(v):
    """fz::reader::size()"""
    if 0 <= v < 128:
        return u8(v)
    if 0 <= v < 65536:
        return u8(128) + struct.pack('<H', v)
    if v in EDGE:
        return u8(192 + EDGE.index(v))
    return u8(240) + i64(v)


def ld_pad(p):
    """fz::reader::ld(): max(1, cols) + p, p in 0..7"""
    return u8(p)


def ld_short(d):
    """fz::reader::ld(): max(1, cols) - d, d in 1..4"""
    return u8(96 + d - 1)


def ld_abs(v):
    """fz::reader::ld(): an absolute value (as size(), >= 128 forms only)"""
    if 0 <= v < 65536:
        return u8(128) + struct.pack('<H', v)
    if v in EDGE:
        return u8(192 + EDGE.index(v))
    return u8(240) + i64(v)


TRANS = {'N': 0, 'T': 1, 'n': 2, 't': 3, 'C': 6, '\0': 7}
OFFS = {'F': 0, 'C': 1, 'R': 2, 'f': 3, 'c': 4, 'r': 5, 'X': 6, '\0': 7}
SCAL = {1: 0, 0: 1, -1: 2, 2: 3, 0.5: 4, 'nan': 5, 'inf': 6, '-0': 7, 1e-30: 8, 3.5: 9}
ZP = {0: 0, 1: 1, -1: 2, 127: 3, 128: 4, 255: 5, 256: 6, -128: 7, -129: 8, 5: 9, 100: 10,
      'min': 11, 'max': 12, 17: 13, -3: 14}
SUP = [('bf16', 'bf16', 'f32'), ('bf16', 'bf16', 'bf16'), ('u8', 's8', 'f32'), ('u8', 's8', 's32'),
       ('u8', 's8', 'bf16'), ('u8', 's8', 'u8'), ('u8', 's8', 's8'), ('s8', 's8', 'f32'),
       ('s8', 's8', 's32'), ('s8', 's8', 'bf16'), ('s8', 's8', 'u8'), ('s8', 's8', 's8'),
       ('f32', 'f32', 'f32')]
DT = {'f32': 0, 'bf16': 1, 's32': 2, 'u8': 3, 's8': 4}


def tr(c):
    return u8(TRANS[c])


def sc(v):
    return u8(SCAL[v])


# ------------------------------------------------------------ api_args

def gemm(op, ta='N', tb='N', M=4, N=4, K=4, lda=ld_pad(0), ldb=ld_pad(0), ldc=ld_pad(0),
         alpha=1, beta=1, oc=None, ao=0, bo=0, nulls=0, alias=0, seed=1):
    b = u8(op) + tr(ta) + tr(tb)
    if op in (2, 3):
        b += u8(OFFS[oc or 'F'])
    b += size(M) + size(N) + size(K) + lda + ldb + ldc + sc(alpha) + sc(beta)
    return b + u8(ao, bo, nulls, alias, seed)


def plan(flags=0, ta='N', tb='N', M=5, N=7, K=3, lda=ld_pad(0), ldb=ld_pad(0), ldc=ld_pad(0),
         pack_mode=0, exec_mode=0, alpha=1, beta=0, nulls=0, seed=2):
    return (u8(4, flags) + tr(ta) + tr(tb) + size(M) + size(N) + size(K) + lda + ldb + ldc +
            u8(pack_mode, exec_mode) + sc(alpha) + sc(beta) + u8(nulls, seed))


def types(t):
    """decode_types(): a supported combination by name, or raw ints"""
    if isinstance(t, tuple) and isinstance(t[0], str):
        return u8(SUP.index(t))
    if isinstance(t, tuple):  # raw ints
        return u8(240) + b''.join(struct.pack('<i', v) for v in t)
    return u8(t)


def post_op(kind='elt', alg=0, alpha=1, beta=1, per_n=0, src_dt=0, ld=ld_pad(0)):
    kb = {'elt': 0, 'bin': 120, 'bad': 240}[kind] if isinstance(kind, str) else kind
    sb = src_dt if src_dt < 2 else 4 + (src_dt - 2)  # 0,1 direct; 2..5 via sb % 8 - 2
    return u8(kb, alg if alg >= 0 else 9) + sc(alpha) + sc(beta) + u8(per_n, sb) + ld


def post_ops(ops, count=None):
    n = len(ops) if count is None else count
    if 0 <= n <= 4:
        nb = n
    elif n in range(-2, 10):
        nb = next(v for v in range(200, 240) if v % 12 == n + 2)
    else:
        raise ValueError(n)
    return u8(nb) + b''.join(ops)


def matmul(t=('u8', 's8', 's32'), ta='N', tb='N', M=6, N=5, K=7, lda=ld_pad(0), ldb=ld_pad(0),
           ldc=ld_pad(0), zp=(0, 0, 0), scale_mode=0, bias_mode=0, ops=b'\0', create=0, pack=0,
           exec_=0, bin_nulls=0, seed=3):
    return (u8(5) + types(t) + tr(ta) + tr(tb) + size(M) + size(N) + size(K) + lda + ldb + ldc +
            u8(*(ZP[z] for z in zp)) + u8(scale_mode, bias_mode) + ops +
            u8(create, pack, exec_, bin_nulls, seed))


def conv_small(t=('f32', 'f32', 'f32'), gmode=1, N=1, icg=3, ocg=4, gsel=0, G=None, IH=5, IW=6,
               KH=3, KW=3, SH=1, SW=1, pads=(1, 1, 1, 1), DH=0, DW=0, off=0, zp=(0, 0),
               scale_mode=0, ops=b'\0', create=0, layout=0, pack=0, exec_=0, bin_nulls=0, seed=4):
    b = u8(6) + types(t) + u8(gmode, N, icg - 1, ocg - 1, gsel)
    if gsel % 4 == 3:
        b += u8(G - 1)
    b += u8(IH - 1, IW - 1, KH - 1, KW - 1, SH - 1, SW - 1, *pads, DH, DW, off)
    return (b + u8(*(ZP[z] for z in zp)) + u8(scale_mode) + ops +
            u8(create, layout, pack, exec_, bin_nulls, seed))


def conv_hostile(fields, t=('f32', 'f32', 'f32'), fix_oh=True, ops=b'\0', seed=5):
    b = u8(6) + types(t) + u8(129 if fix_oh else 128) + b''.join(size(v) for v in fields)
    return b + u8(0, 0, 0) + ops + u8(0, 0, 0, 0, 0, seed)


def misc(sub, *rest):
    return u8(7, sub) + b''.join(rest)


def batch(bf16, ta, tb, M, N, K, lda, ldb, ldc, count, sa, sb, sc_, alpha=1, beta=1, nulls=0,
          seed=6):
    """fuzz_batch (misc 9): count in 0..5 or -1..-3; sa/sb/sc_ stride bytes"""
    cb = count if count >= 0 else next(v for v in range(230, 250) if -1 - v % 3 == count)
    return misc(9, u8(bf16), tr(ta), tr(tb), size(M), size(N), size(K), lda, ldb, ldc, u8(cb),
                sa, sb, sc_, sc(alpha), sc(beta), u8(nulls, seed))


def api_seeds():
    s = {}
    # BLAS-like GEMMs
    s['sgemm_valid'] = gemm(0, M=9, N=17, K=5, ldc=ld_pad(3))
    s['sgemm_tt_alias_all'] = gemm(0, 'T', 't', 12, 7, 33, ld_pad(1), ld_pad(2), ld_pad(5),
                                   alpha=2, beta=0, alias=4)
    s['sgemm_negative_m'] = gemm(0, M=-1)
    s['sgemm_bad_trans'] = gemm(0, ta='C')
    s['sgemm_lda_short'] = gemm(0, M=3, N=3, K=8, lda=ld_short(1))
    s['sgemm_huge_ld_one_row'] = gemm(0, M=1, N=3, K=4, lda=ld_abs(2**63 - 1), ldc=ld_abs(2**40))
    s['sgemm_extent_overflow'] = gemm(0, M=2**40, N=2**40, K=2**40, lda=ld_abs(2**62))
    s['sgemm_null_c'] = gemm(0, nulls=4)
    s['sgemm_k0_nullab'] = gemm(0, M=3, N=5, K=0, nulls=3, beta=0.5)
    s['sgemm_alias_c_a'] = gemm(0, M=8, N=8, K=8, alias=2, alpha='nan', beta='inf')
    s['bf16_valid_alias_ab'] = gemm(1, 'N', 'T', 16, 9, 6, alias=1, alpha=0.5, beta=-1)
    s['bf16_empty_n'] = gemm(1, M=65536, N=0, K=7)
    s['u8s8_offset_c'] = gemm(2, 'T', 'N', 7, 5, 9, oc='C', ao=200, bo=0x85, beta=2)
    s['u8s8_bad_offset'] = gemm(2, oc='X')
    s['s8s8_offset_r'] = gemm(3, 'n', 't', 4, 31, 13, ld_pad(4), ld_pad(1), ld_pad(2), oc='R',
                              ao=0x80, bo=5, alpha=3.5, beta=0)
    s['s8s8_null_co'] = gemm(3, oc='f', nulls=8)
    # gemm plan
    s['plan_pack_exec'] = plan()
    s['plan_owned_exec_null'] = plan(ta='T', tb='T', M=13, N=40, K=9, pack_mode=1, exec_mode=1,
                                     alpha=0.5, beta=1)
    s['plan_misaligned_pack'] = plan(pack_mode=4 | 0, exec_mode=0)
    s['plan_exec_garbage'] = plan(pack_mode=2, exec_mode=2)
    s['plan_exec_misaligned_copy'] = plan(M=3, N=33, K=2, exec_mode=3)
    s['plan_bad_ld'] = plan(ldb=ld_short(2))
    s['plan_null_handle'] = plan(flags=1)
    s['plan_null_b'] = plan(nulls=1)
    # matmul
    s['matmul_bf16_chain'] = matmul(('bf16', 'bf16', 'f32'), 'N', 'T', 8, 10, 12, scale_mode=2,
                                    bias_mode=1,
                                    ops=post_ops([post_op('elt', 0), post_op('bin', 0, per_n=1),
                                                  post_op('elt', 2, alpha=-1, beta=2)]))
    s['matmul_u8_zp_binary_full'] = matmul(('u8', 's8', 'u8'), M=5, N=9, K=16, ldc=ld_pad(2),
                                           zp=(128, -3, 5), scale_mode=1,
                                           ops=post_ops([post_op('bin', 1, src_dt=1, ld=ld_pad(1)),
                                                         post_op('elt', 1, alpha=0.5)]))
    s['matmul_exec_garbage'] = matmul(('s8', 's8', 'bf16'), exec_=2 << 3)
    s['matmul_exec_misaligned'] = matmul(('s8', 's8', 'f32'), exec_=3 << 3, scale_mode=4)
    s['matmul_bad_types'] = matmul((7, -1, 2))
    s['matmul_unsupported_types'] = matmul(128 + 0 * 25 + 0 * 5 + 0)  # f32, f32 -> f32
    s['matmul_too_many_post_ops'] = matmul(ops=post_ops([], count=9))
    s['matmul_bad_post_op_kind'] = matmul(ops=post_ops([post_op(3 + 238)]))
    s['matmul_sum'] = matmul(('u8', 's8', 'u8'), M=5, N=9, K=16, ldc=ld_pad(2),
                             ops=post_ops([post_op(2 + 238, alpha=0.5, beta=3.5), post_op('elt', 0)]))
    s['matmul_sum_nan_scale'] = matmul(ops=post_ops([post_op(2 + 238, alpha='nan')]))
    s['matmul_binary_bad_ld'] = matmul(ops=post_ops([post_op('bin', 0, per_n=0, ld=ld_short(1))]))
    s['matmul_binary_s32_src'] = matmul(ops=post_ops([post_op('bin', 0, per_n=1, src_dt=2)]))
    s['matmul_null_b_misaligned'] = matmul(pack=1 | (1 << 1))
    s['matmul_null_desc'] = matmul(create=2)
    s['matmul_missing_binary_src'] = matmul(ops=post_ops([post_op('bin', 0, per_n=1)]), bin_nulls=1)
    s['matmul_scales_per_n_null'] = matmul(scale_mode=3)
    # conv2d
    s['conv_f32_3x3_pad'] = conv_small(scale_mode=1,
                                       ops=post_ops([post_op('elt', 0), post_op('bin', 0, per_n=1)]),
                                       exec_=64)
    s['conv_u8_depthwise'] = conv_small(('u8', 's8', 'u8'), gsel=3, G=8, IH=7, IW=7, SH=2, SW=2,
                                        zp=(5, -3), scale_mode=2, exec_=64)
    s['conv_bf16_grouped_hwio'] = conv_small(('bf16', 'bf16', 'bf16'), gsel=1, icg=2, ocg=3, DH=1,
                                             DW=1, pads=(2, 2, 2, 2), layout=1,
                                             ops=post_ops([post_op('bin', 1, src_dt=1, ld=ld_pad(3))]))
    s['conv_s8_1x1_s32'] = conv_small(('s8', 's8', 's32'), icg=4, ocg=8, KH=1, KW=1,
                                      pads=(0, 0, 0, 0))
    s['conv_wrong_oh'] = conv_small(off=7)
    s['conv_bad_layout'] = conv_small(layout=6)
    s['conv_exec_garbage'] = conv_small(exec_=2 << 3)
    s['conv_null_weights'] = conv_small(pack=1)
    s['conv_batch0'] = conv_small(N=0, exec_=3)
    s['conv_hostile_huge'] = conv_hostile([1, 1, 2**40, 2**40, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0,
                                           0, 0])
    s['conv_hostile_negative'] = conv_hostile([1, -1, 3, 3, 3, 3, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
    s['conv_hostile_groups'] = conv_hostile([2, 3, 4, 5, 5, 6, 0, 0, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0],
                                            t=('f32', 'f32', 'f32'))
    # small calls (several per input)
    s['misc_names'] = misc(0, u8(3)) + misc(0, u8(12)) + misc(1, u8(5)) + misc(1, u8(6))
    s['misc_convert'] = (misc(2, size(37), u8(0, 7)) + misc(3, size(40), u8(0, 8)) +
                         misc(2, size(-1), u8(0, 0)) + misc(3, size(5), u8(2, 0)) +
                         misc(2, size(2**62), u8(0, 0)))
    s['misc_explain'] = (misc(4, tr('N'), tr('T'), size(100), size(200), size(300), u8(1, 40)) +
                         misc(4, tr('T'), tr('N'), size(3), size(3), size(3), u8(2, 0, 1)) +
                         misc(4, tr('N'), tr('N'), size(3), size(3), size(3), u8(8 | 1, 10)) +
                         misc(4, tr('C'), tr('N'), size(3), size(3), size(3), u8(0)))
    s['misc_setters'] = (misc(5, u8(0, 1)) + misc(5, u8(200, 0)) + misc(6, size(5)) +
                         misc(6, size(-2**63)))
    s['misc_null_handles'] = misc(7)
    s['misc_set_max_isa_valid_range'] = misc(8, u8(0)) + misc(8, u8(1))  # 6 and 7: refused
    # strided batches (misc 9): stride bytes 0 item, 1 item + 1, 2 shared,
    # 3 side by side, 4 overlapping, 5 negative, 6 a size() value
    s['batch_f32_shared_b'] = batch(0, 'N', 'T', 5, 7, 9, ld_pad(0), ld_pad(1), ld_pad(2), 3,
                                    u8(0), u8(2), u8(1), beta=0)
    s['batch_bf16_side_by_side'] = batch(1, 'N', 'N', 4, 3, 6, ld_pad(0), ld_pad(0), ld_abs(12),
                                         4, u8(1), u8(0), u8(3))
    s['batch_f32_tt_single'] = batch(0, 'T', 'T', 3, 2, 17, ld_pad(3), ld_pad(0), ld_pad(0), 1,
                                     u8(6) + size(2**40), u8(0), u8(0), alpha=2, beta=0.5)
    s['batch_refused'] = (batch(0, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 3,
                                u8(0), u8(0), u8(4)) +                       # C items overlap
                          batch(1, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 2,
                                u8(5), u8(0), u8(0)) +                       # stride_a < 0
                          batch(0, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), -3,
                                u8(0), u8(0), u8(0)) +                       # batch < 0
                          batch(0, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 3,
                                u8(6) + size(2**62), u8(0), u8(0)) +         # span overflows
                          batch(0, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 2,
                                u8(0), u8(0), u8(0), nulls=4))               # C NULL
    s['batch_empty'] = (batch(0, 'N', 'N', 4, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 0,
                              u8(0), u8(0), u8(0)) +
                        batch(1, 'N', 'N', 0, 4, 4, ld_pad(0), ld_pad(0), ld_pad(0), 5,
                              u8(0), u8(0), u8(2)))
    return s


# ------------------------------------------------------------ jit_exec

def dim(v):
    if v <= 64:
        return u8(v)
    assert v >= 65 and (v - 65) % 4 == 0
    return u8(240 + (v - 65) // 4)


def shape(ta=0, tb=0, M=8, N=8, K=8, pads=0):
    return u8(ta | (tb << 1)) + dim(M) + dim(N) + dim(K) + u8(pads)


TIER = {'top': 0, 'avx2': 4, 'avx512_core': 5, 'vnni': 6, 'bf16': 7}


def jgemm(op, tier='top', threads=1, alpha_i=0, beta_i=1, range_i=1, flags=None, seed=1, **kw):
    b = u8(op, TIER[tier], threads - 1) + shape(**kw) + u8(alpha_i | (beta_i << 3) | (range_i << 6))
    if op == 4:
        b += u8(flags or 0)
    return b + struct.pack('<H', seed)


def jint8(op, tier='top', threads=1, oc=0, alpha_i=0, beta_i=1, ao=None, bo=None, seed=1, **kw):
    b = u8(op, TIER[tier], threads - 1) + shape(**kw) + u8(oc | (alpha_i << 2) | (beta_i << 5))
    zb = (1 if ao is not None else 0) | (2 if bo is not None else 0)
    b += u8(zb)
    if ao is not None:
        b += u8(ao)
    if bo is not None:
        b += u8(bo)
    return b + struct.pack('<H', seed)


ELT = {'relu': 0, 'leaky': 2, 'clip': 4, 'gelu_tanh': 6, 'gelu_erf': 7, 'silu': 8,
       'sigmoid': 9, 'tanh': 10}


def jchain(*ops):
    b = u8(len(ops))
    for o in ops:
        if o[0] == 'bin':  # ('bin', mul, per_n, bf16, pad)
            _, mul, per_n, bf16, pad = o
            b += u8(11 | (16 if mul else 0) | (32 if per_n else 0) | (64 if bf16 else 0) |
                    (128 if pad else 0))
        elif o[0] == 'sum':  # ('sum', scale index 0..3, zero point index 0..3)
            _, scale, zp = o
            b += u8(15 | (scale << 4) | (zp << 6))
        else:  # (name, leaky index or clip byte)
            name = o[0]
            arg = o[1] if len(o) > 1 else 0
            if name == 'clip':
                b += u8(ELT[name]) + u8(arg)
            else:
                b += u8(ELT[name] | (arg << 5))
    return b


def jzp(za=None, zb=None, zc=None):
    b = u8((1 if za is not None else 0) | (2 if zb is not None else 0) | (4 if zc is not None else 0))
    for z in (za, zb, zc):
        if z is not None:
            b += u8(z)
    return b


def jmatmul(t, tier='top', threads=1, zp=b'\0', flags=0, seed=7, quant=0, chain=b'\0', **kw):
    return (u8(5, TIER[tier], threads - 1) + u8(SUP.index(t)) + shape(**kw) + zp + u8(flags) +
            struct.pack('<H', seed) + u8(quant) + chain)


def jconv(t, tier='top', threads=1, N=1, gsel=0, icg=3, ocg=4, kb=0, pb=0, IH=6, IW=6,
          zp=b'\0', flags=0, seed=9, quant=0, chain=b'\0'):
    nb = 7 if N == 0 else N - 1
    return (u8(6, TIER[tier], threads - 1) + u8(SUP.index(t)) + u8(nb, gsel, icg - 1, ocg - 1, kb, pb,
                                                                   IH - 1, IW - 1) +
            zp + u8(flags) + struct.pack('<H', seed) + u8(quant) + chain)


def kbyte(KH=1, KW=1, SH=1, SW=1, DH=0, DW=0):
    return (KH - 1) | ((KW - 1) << 2) | ((SH - 1) << 4) | ((SW - 1) << 5) | (DH << 6) | (DW << 7)


def pbyte(t=0, l=0, b=0, r=0):
    return t | (l << 2) | (b << 4) | (r << 6)


def jit_seeds():
    s = {}
    s['sgemm_nn_64'] = jgemm(0, M=64, N=64, K=64, range_i=3)
    s['sgemm_tt_pads_beta0'] = jgemm(0, ta=1, tb=1, M=13, N=37, K=9, pads=0b101011, beta_i=0,
                                     alpha_i=2, threads=2)
    s['sgemm_1x1x1'] = jgemm(0, M=1, N=1, K=1, alpha_i=1, beta_i=2)
    s['sgemm_k0'] = jgemm(0, M=5, N=7, K=0, beta_i=5)
    s['sgemm_large_avx2'] = jgemm(0, tier='avx2', M=65, N=33, K=125, alpha_i=3, beta_i=6)
    s['sgemm_avx512_core_nt'] = jgemm(0, tier='avx512_core', tb=1, M=24, N=48, K=17)
    s['bf16_nt'] = jgemm(1, tb=1, M=12, N=32, K=30, range_i=3)
    s['bf16_tn_beta'] = jgemm(1, tier='avx512_core', ta=1, M=7, N=5, K=66 - 1, alpha_i=4, beta_i=3)
    s['u8s8_fixed'] = jint8(2, M=16, N=16, K=64, oc=0)
    s['u8s8_col_zp'] = jint8(2, M=9, N=40, K=7, oc=1, ao=200, bo=0xfd, alpha_i=3, beta_i=4,
                             pads=0b110101)
    s['u8s8_row_vnni'] = jint8(2, tier='vnni', ta=1, tb=1, M=3, N=3, K=129 - 64, oc=2, bo=7)
    s['s8s8_row_avx2'] = jint8(3, tier='avx2', M=20, N=12, K=31, oc=2, ao=0x80, alpha_i=5,
                               beta_i=7)
    s['s8s8_small_m'] = jint8(3, tier='bf16', M=2, N=64, K=128 - 63, oc=0, tb=1)
    s['plan_pack'] = jgemm(4, M=30, N=70 - 6, K=20)
    s['plan_owned_twice'] = jgemm(4, ta=1, M=8, N=9, K=10, flags=3, beta_i=1, threads=2)
    s['plan_avx2'] = jgemm(4, tier='avx2', M=17, N=33, K=5, flags=2, pads=0b111)
    s['matmul_bf16_f32_relu_gelu'] = jmatmul(SUP[0], M=12, N=40, K=16, quant=1 | 4,
                                             chain=jchain(('relu',), ('gelu_tanh',)))
    s['matmul_bf16_bf16_binary'] = jmatmul(SUP[1], tb=1, M=5, N=33, K=8, quant=2,
                                           chain=jchain(('bin', 0, 0, 1, 1), ('gelu_erf',)))
    s['matmul_u8_u8_zp_clip_leaky'] = jmatmul(SUP[5], M=9, N=20, K=12, zp=jzp(128, 0xfe, 12),
                                              quant=2 | 4, chain=jchain(('clip', 0x5a), ('leaky', 1)))
    s['matmul_s8_s32_plain'] = jmatmul(SUP[8], M=33, N=17, K=64, zp=jzp(None, 5, 3))
    s['matmul_s8_s8_sigmoid_mul'] = jmatmul(SUP[11], tier='avx512_core', M=4, N=64, K=36,
                                            quant=1, chain=jchain(('sigmoid',), ('bin', 1, 0, 1, 0),
                                                                  ('tanh',), ('silu',)))
    s['matmul_u8_bf16_cross_packed'] = jmatmul(SUP[4], tier='avx2', M=7, N=7, K=7, flags=1,
                                               zp=jzp(3, None, None), quant=4,
                                               chain=jchain(('bin', 0, 1, 0, 0)))
    s['conv_f32_3x3_pad'] = jconv(SUP[12], kb=kbyte(3, 3), pb=pbyte(1, 1, 1, 1), quant=4,
                                  chain=jchain(('relu',)))
    s['conv_f32_strided_dil_hwio'] = jconv(SUP[12], N=2, icg=5, ocg=7, kb=kbyte(3, 2, 2, 1, 1, 0),
                                           pb=pbyte(2, 0, 1, 2), IH=9, IW=8, flags=1,
                                           chain=jchain(('bin', 0, 0, 0, 1)))
    s['conv_bf16_grouped'] = jconv(SUP[1], gsel=2 | (1 << 4), icg=2, ocg=6, kb=kbyte(2, 2),
                                   quant=2, chain=jchain(('gelu_erf',)))
    s['conv_u8_depthwise_s2'] = jconv(SUP[5], gsel=3 | (15 << 2), kb=kbyte(3, 3, 2, 2),
                                      pb=pbyte(1, 1, 1, 1), IH=10, IW=9, zp=jzp(7, None, 3),
                                      quant=2 | 4, chain=jchain(('leaky', 1)))
    s['conv_s8_1x1_s32'] = jconv(SUP[8], icg=8, ocg=8, flags=2, zp=jzp(0xf0, None, None))
    s['conv_s8_f32_chain'] = jconv(SUP[7], tier='avx2', icg=4, ocg=5, kb=kbyte(1, 3),
                                   pb=pbyte(0, 1, 0, 1), quant=1,
                                   chain=jchain(('tanh',), ('bin', 1, 1, 1, 0)))
    s['matmul_u8_u8_sum_relu'] = jmatmul(SUP[5], M=9, N=20, K=12, zp=jzp(128, None, 12), quant=2,
                                         chain=jchain(('sum', 1, 1), ('relu',)))
    s['matmul_f32_f32_sum'] = jmatmul(SUP[12], M=13, N=40, K=69, quant=4,
                                      chain=jchain(('gelu_tanh',), ('sum', 3, 2)))
    # flags & 2: the first binary operand of C's type and ld is C itself in
    # the fast run (an in-place residual), a copy of C0 in the scalar one.
    s['matmul_bf16_f32_inplace_add'] = jmatmul(SUP[0], M=13, N=40, K=69, flags=2, quant=4,
                                               chain=jchain(('bin', 0, 0, 0, 0), ('relu',)))
    s['matmul_bf16_inplace_mul'] = jmatmul(SUP[1], tb=1, M=21, N=33, K=40, flags=2, quant=2,
                                           chain=jchain(('gelu_tanh',), ('bin', 1, 0, 1, 0)))
    s['conv_f32_3x3_sum'] = jconv(SUP[12], kb=kbyte(3, 3), pb=pbyte(1, 1, 1, 1), quant=4,
                                  chain=jchain(('sum', 0, 0), ('relu',)))
    s['conv_u8_depthwise_sum'] = jconv(SUP[5], gsel=3 | (15 << 2), kb=kbyte(3, 3),
                                       pb=pbyte(1, 1, 1, 1), IH=8, IW=9, zp=jzp(7, None, 3),
                                       quant=2, chain=jchain(('sum', 2, 3)))
    s['conv_batch0'] = jconv(SUP[12], N=0)
    return s


def main():
    check = '--check' in sys.argv[1:]
    bad = 0
    for target, seeds in (('api_args', api_seeds()), ('jit_exec', jit_seeds())):
        d = os.path.join(HERE, 'corpus', target)
        os.makedirs(d, exist_ok=True)
        for name, data in sorted(seeds.items()):
            p = os.path.join(d, name)
            if check:
                try:
                    with open(p, 'rb') as f:
                        if f.read() != data:
                            print('differs: ' + p)
                            bad = 1
                except OSError:
                    print('missing: ' + p)
                    bad = 1
            else:
                with open(p, 'wb') as f:
                    f.write(data)
        if not check:
            for old in os.listdir(d):
                if old not in seeds:
                    os.remove(os.path.join(d, old))
            print('%s: %d seeds in %s' % (target, len(seeds), os.path.relpath(d)))
    return bad


if __name__ == '__main__':
    sys.exit(main())
