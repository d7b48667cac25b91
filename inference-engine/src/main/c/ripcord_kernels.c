/*
 * Ripcord's native decode kernels: quantized weight rows times one activation row quantized to int8 blocks.
 *
 * Design note. The Java side owns threads, memory and cancellation: one call computes one work item (a range of
 * weight rows against one activation row), allocates nothing and keeps no state. Every variant computes the
 * numeric definition that dev.ripcord.engine.kernel.NativeTwin spells out, bit for bit:
 *
 *   per block b (32 elements for Q8_0/Q4_0, 256 for Q4_K/Q6_K), the exact integer
 *       isum_b = sum_i sc(i) * q(i) * a(i)          (weight quant q, its sub-block scale sc, activation quant a)
 *   then, in block order, eight float accumulators
 *       acc[b mod 8] = fma((float) isum_b, dw_b * da_b, acc[b mod 8])
 *   folded pairwise: acc[l] += acc[l + 4] (l < 4), acc[l] += acc[l + 2] (l < 2), acc[0] += acc[1];
 *   Q4_K subtracts its minimums, one chain m = fma(dmin_b * da_b, (float) sum_j min_j * bsum_j, m), from acc[0].
 *
 * The integer sums are exact in every instruction set, so the variants differ only in how fast they get them.
 * Variants per instruction set are compiled into this one library with function target attributes and chosen
 * by the caller from ripcord_isa_mask(), which reads cpuid (and the OS's xgetbv state) once per call.
 *
 * Activation row layout (k elements): k int8 quants, then k/32 float scales (block b's at index b; 256-element
 * blocks use the first k/256), then k/32 int32 sums of each 32 quants.
 *
 * Compile without -ffast-math and with -ffp-contract=off: the float steps above must stay as written.
 */
#include <stdint.h>
#include <string.h>
#include <math.h>

#define RK_GENERIC 0
#define RK_AVX2 1
#define RK_AVXVNNI 2
#define RK_AVX512VNNI 3

/* ggml type ids */
#define T_Q4_0 2
#define T_Q8_0 8
#define T_Q4_K 12
#define T_Q6_K 14

static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t man = h & 0x3FF;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else {
            /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400) == 0);
            bits = sign | ((uint32_t) (127 - 15 - e) << 23) | ((man & 0x3FF) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t rd16(const uint8_t *p) {
    return (uint16_t) (p[0] | (p[1] << 8));
}

static inline int32_t rd32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline float rdf(const uint8_t *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}

/* Q4_K's 6-bit scale (which = 0) or minimum (which = 1) of sub-block j, as ggml's get_scale_min_k4. */
static inline int scale_min_k4(const uint8_t *q, int j, int which) {
    if (j < 4) {
        return which == 0 ? q[j] & 63 : q[j + 4] & 63;
    }
    return which == 0 ? (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4) : (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
}

static inline float fold8(float *acc) {
    for (int l = 0; l < 4; l++) acc[l] = acc[l] + acc[l + 4];
    for (int l = 0; l < 2; l++) acc[l] = acc[l] + acc[l + 2];
    return acc[0] + acc[1];
}

/* ------------------------------------------------------------------------------------------------ generic C */

static int32_t isum_q8_0(const uint8_t *blk, const int8_t *a) {
    const int8_t *q = (const int8_t *) (blk + 2);
    int32_t s = 0;
    for (int i = 0; i < 32; i++) s += q[i] * a[i];
    return s;
}

static int32_t isum_q4_0(const uint8_t *blk, const int8_t *a) {
    int32_t s = 0;
    for (int i = 0; i < 16; i++) {
        s += ((blk[2 + i] & 0xF) - 8) * a[i];
        s += ((blk[2 + i] >> 4) - 8) * a[i + 16];
    }
    return s;
}

static int32_t isum_q4_k(const uint8_t *blk, const int8_t *a) {
    int32_t s = 0;
    for (int j = 0; j < 8; j++) {
        int sc = scale_min_k4(blk + 4, j, 0);
        const uint8_t *qs = blk + 16 + 32 * (j / 2);
        int32_t t = 0;
        for (int i = 0; i < 32; i++) {
            int q = j % 2 == 0 ? qs[i] & 0xF : qs[i] >> 4;
            t += q * a[32 * j + i];
        }
        s += sc * t;
    }
    return s;
}

static int32_t isum_q6_k(const uint8_t *blk, const int8_t *a) {
    int32_t s = 0;
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = blk + 64 * half;
        const uint8_t *qh = blk + 128 + 32 * half;
        const int8_t *sc = (const int8_t *) (blk + 192 + 8 * half);
        for (int l = 0; l < 32; l++) {
            int h = qh[l];
            int q0 = ((ql[l] & 0xF) | ((h & 3) << 4)) - 32;
            int q1 = ((ql[l + 32] & 0xF) | (((h >> 2) & 3) << 4)) - 32;
            int q2 = ((ql[l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
            int q3 = ((ql[l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
            const int8_t *aa = a + 128 * half + l;
            s += sc[l / 16 + 0] * q0 * aa[0];
            s += sc[l / 16 + 2] * q1 * aa[32];
            s += sc[l / 16 + 4] * q2 * aa[64];
            s += sc[l / 16 + 6] * q3 * aa[96];
        }
    }
    return s;
}

static float row_generic(int type, const uint8_t *w, int k, const uint8_t *qa) {
    const int8_t *a = (const int8_t *) qa;
    const uint8_t *scales = qa + k;
    const uint8_t *sums = qa + k + 4 * (k / 32);
    float acc[8] = {0};
    float mins = 0.0f;
    switch (type) {
    case T_Q8_0:
        for (int b = 0; b < k / 32; b++) {
            const uint8_t *blk = w + 34 * b;
            float s = f16_to_f32(rd16(blk)) * rdf(scales + 4 * b);
            acc[b & 7] = fmaf((float) isum_q8_0(blk, a + 32 * b), s, acc[b & 7]);
        }
        break;
    case T_Q4_0:
        for (int b = 0; b < k / 32; b++) {
            const uint8_t *blk = w + 18 * b;
            float s = f16_to_f32(rd16(blk)) * rdf(scales + 4 * b);
            acc[b & 7] = fmaf((float) isum_q4_0(blk, a + 32 * b), s, acc[b & 7]);
        }
        break;
    case T_Q4_K:
        for (int b = 0; b < k / 256; b++) {
            const uint8_t *blk = w + 144 * b;
            float da = rdf(scales + 4 * b);
            float s = f16_to_f32(rd16(blk)) * da;
            acc[b & 7] = fmaf((float) isum_q4_k(blk, a + 256 * b), s, acc[b & 7]);
            int32_t summs = 0;
            for (int j = 0; j < 8; j++) summs += scale_min_k4(blk + 4, j, 1) * rd32(sums + 4 * (8 * b + j));
            mins = fmaf(f16_to_f32(rd16(blk + 2)) * da, (float) summs, mins);
        }
        break;
    case T_Q6_K:
        for (int b = 0; b < k / 256; b++) {
            const uint8_t *blk = w + 210 * b;
            float s = f16_to_f32(rd16(blk + 208)) * rdf(scales + 4 * b);
            acc[b & 7] = fmaf((float) isum_q6_k(blk, a + 256 * b), s, acc[b & 7]);
        }
        break;
    }
    return fold8(acc) - mins;
}

/* ------------------------------------------------------------------------------------------------ x86-64 */
#if defined(__x86_64__)
#include <immintrin.h>
#include <cpuid.h>

#define T_AVX2 __attribute__((target("avx2,fma,f16c")))

T_AVX2 static inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* Eight vectors of eight int32 lanes to one vector of their eight sums (v[i]'s sum in lane i). */
T_AVX2 static inline __m256i hsum8_i32(const __m256i *v) {
    __m256i t0 = _mm256_hadd_epi32(v[0], v[1]);
    __m256i t1 = _mm256_hadd_epi32(v[2], v[3]);
    __m256i t2 = _mm256_hadd_epi32(v[4], v[5]);
    __m256i t3 = _mm256_hadd_epi32(v[6], v[7]);
    __m256i u0 = _mm256_hadd_epi32(t0, t1);
    __m256i u1 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* 32 nibbles of a Q4_0 block (16 bytes) in element order: low nibbles are elements 0-15, high 16-31. */
T_AVX2 static inline __m256i q4_0_nibbles(const uint8_t *qs) {
    __m128i b = _mm_loadu_si128((const __m128i *) qs);
    __m128i m = _mm_set1_epi8(0xF);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

/*
 * The Q8_0 and Q4_0 bodies, once per way of summing u8 x s8 products into int32 lanes (DOT(acc, u, s)): eight
 * blocks at a time (NAME##_group), their lane sums reduced together and scaled as one vector into the eight
 * accumulators; the remaining blocks one at a time, in the same accumulator lanes. NAME##_pair computes two rows
 * far apart group by group, alternating: two sequential memory streams in flight where one row keeps one (over
 * weights streamed from memory, one row at a time measured about 1.7x the time per block of two).
 */
#define SMALL_BLOCK_BODY(NAME, ATTR, DOT)                                                                          \
ATTR static inline __m256 NAME##_group(int type, const uint8_t *w, int b, const int8_t *a, const float *scales,  \
                                       const int32_t *sums, __m256 acc) {                                          \
    int bytes = type == T_Q8_0 ? 34 : 18;                                                                          \
    __m256i v[8];                                                                                                  \
    for (int i = 0; i < 8; i++) {                                                                                  \
        const uint8_t *blk = w + (int64_t) bytes * (b + i);                                                       \
        __m256i av = _mm256_loadu_si256((const __m256i *) (a + 32 * (b + i)));                                    \
        __m256i u, s;                                                                                              \
        if (type == T_Q8_0) {                                                                                      \
            __m256i q = _mm256_loadu_si256((const __m256i *) (blk + 2));                                          \
            u = _mm256_sign_epi8(q, q);                                                                            \
            s = _mm256_sign_epi8(av, q);                                                                           \
        } else {                                                                                                   \
            u = q4_0_nibbles(blk + 2);                                                                             \
            s = av;                                                                                                \
        }                                                                                                          \
        v[i] = DOT(_mm256_setzero_si256(), u, s);                                                                  \
    }                                                                                                              \
    __m256i isum = hsum8_i32(v);                                                                                   \
    if (type == T_Q4_0) {                                                                                          \
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *) (sums + b)), 3));    \
    }                                                                                                              \
    const uint8_t *g = w + (int64_t) bytes * b;                                                                   \
    __m128i d = _mm_set_epi16((short) rd16(g + 7 * bytes), (short) rd16(g + 6 * bytes),                           \
            (short) rd16(g + 5 * bytes), (short) rd16(g + 4 * bytes), (short) rd16(g + 3 * bytes),                \
            (short) rd16(g + 2 * bytes), (short) rd16(g + bytes), (short) rd16(g));                               \
    __m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(d), _mm256_loadu_ps(scales + b));                                    \
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), sc, acc);                                                     \
}                                                                                                                  \
ATTR static inline float NAME##_tail(int type, const uint8_t *w, int b, int nb, const int8_t *a,                  \
                                     const float *scales, __m256 acc) {                                            \
    int bytes = type == T_Q8_0 ? 34 : 18;                                                                          \
    float lanes[8];                                                                                                \
    _mm256_storeu_ps(lanes, acc);                                                                                  \
    for (; b < nb; b++) {                                                                                          \
        const uint8_t *blk = w + (int64_t) bytes * b;                                                             \
        int32_t isum = type == T_Q8_0 ? isum_q8_0(blk, a + 32 * b) : isum_q4_0(blk, a + 32 * b);                  \
        float s = f16_to_f32(rd16(blk)) * scales[b];                                                               \
        lanes[b & 7] = fmaf((float) isum, s, lanes[b & 7]);                                                        \
    }                                                                                                              \
    return fold8(lanes);                                                                                           \
}                                                                                                                  \
ATTR static float NAME(int type, const uint8_t *w, int k, const uint8_t *qa) {                                     \
    const int8_t *a = (const int8_t *) qa;                                                                         \
    const float *scales = (const float *) (qa + k);                                                               \
    const int32_t *sums = (const int32_t *) (qa + k + 4 * (k / 32));                                              \
    int nb = k / 32, b = 0;                                                                                        \
    __m256 acc = _mm256_setzero_ps();                                                                              \
    for (; b + 8 <= nb; b += 8) acc = NAME##_group(type, w, b, a, scales, sums, acc);                             \
    return NAME##_tail(type, w, b, nb, a, scales, acc);                                                            \
}                                                                                                                  \
ATTR static void NAME##_pair(int type, const uint8_t *w0, const uint8_t *w1, int k, const uint8_t *qa,           \
                             float *out0, float *out1) {                                                           \
    const int8_t *a = (const int8_t *) qa;                                                                         \
    const float *scales = (const float *) (qa + k);                                                               \
    const int32_t *sums = (const int32_t *) (qa + k + 4 * (k / 32));                                              \
    int nb = k / 32, b = 0;                                                                                        \
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();                                                 \
    for (; b + 8 <= nb; b += 8) {                                                                                  \
        acc0 = NAME##_group(type, w0, b, a, scales, sums, acc0);                                                   \
        acc1 = NAME##_group(type, w1, b, a, scales, sums, acc1);                                                   \
    }                                                                                                              \
    *out0 = NAME##_tail(type, w0, b, nb, a, scales, acc0);                                                         \
    *out1 = NAME##_tail(type, w1, b, nb, a, scales, acc1);                                                         \
}

#define DOT_AVX2(acc, u, s) _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
SMALL_BLOCK_BODY(small_avx2, T_AVX2, DOT_AVX2)

#define T_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define DOT_AVXVNNI(acc, u, s) _mm256_dpbusd_avx_epi32(acc, u, s)
SMALL_BLOCK_BODY(small_avxvnni, T_AVXVNNI, DOT_AVXVNNI)

#define T_AVX512VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))
#define DOT_AVX512VNNI(acc, u, s) _mm256_dpbusd_epi32(acc, u, s)
SMALL_BLOCK_BODY(small_avx512vnni, T_AVX512VNNI, DOT_AVX512VNNI)

/* Q4_K and Q6_K: sub-block scales multiply 16-bit pair sums, so every x86 variant shares this AVX2 body. */
T_AVX2 static float row_k_avx2(int type, const uint8_t *w, int k, const uint8_t *qa) {
    const int8_t *a = (const int8_t *) qa;
    const float *scales = (const float *) (qa + k);
    const int32_t *sums = (const int32_t *) (qa + k + 4 * (k / 32));
    const __m256i m4 = _mm256_set1_epi8(0xF);
    float acc[8] = {0};
    float mins = 0.0f;
    for (int b = 0; b < k / 256; b++) {
        const int8_t *ab = a + 256 * b;
        __m256i isum = _mm256_setzero_si256();
        float s;
        if (type == T_Q4_K) {
            const uint8_t *blk = w + 144L * b;
            for (int p = 0; p < 4; p++) {
                __m256i q = _mm256_loadu_si256((const __m256i *) (blk + 16 + 32 * p));
                __m256i lo = _mm256_and_si256(q, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *) (ab + 64 * p)));
                __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *) (ab + 64 * p + 32)));
                isum = _mm256_add_epi32(isum,
                        _mm256_madd_epi16(p0, _mm256_set1_epi16((short) scale_min_k4(blk + 4, 2 * p, 0))));
                isum = _mm256_add_epi32(isum,
                        _mm256_madd_epi16(p1, _mm256_set1_epi16((short) scale_min_k4(blk + 4, 2 * p + 1, 0))));
            }
            float da = scales[b];
            s = f16_to_f32(rd16(blk)) * da;
            int32_t summs = 0;
            for (int j = 0; j < 8; j++) summs += scale_min_k4(blk + 4, j, 1) * sums[8 * b + j];
            mins = fmaf(f16_to_f32(rd16(blk + 2)) * da, (float) summs, mins);
        } else {
            const uint8_t *blk = w + 210L * b;
            const __m256i m2 = _mm256_set1_epi8(3);
            const __m256i k32 = _mm256_set1_epi8(32);
            for (int half = 0; half < 2; half++) {
                const uint8_t *ql = blk + 64 * half;
                const int8_t *sc = (const int8_t *) (blk + 192 + 8 * half);
                __m256i l0 = _mm256_loadu_si256((const __m256i *) ql);
                __m256i l1 = _mm256_loadu_si256((const __m256i *) (ql + 32));
                __m256i h = _mm256_loadu_si256((const __m256i *) (blk + 128 + 32 * half));
                __m256i q[4];
                q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
                q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
                q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
                q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                        _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
                for (int g = 0; g < 4; g++) {
                    __m256i av = _mm256_loadu_si256((const __m256i *) (ab + 128 * half + 32 * g));
                    __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q[g], av), _mm256_maddubs_epi16(k32, av));
                    __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[2 * g + 1]), _mm_set1_epi16(sc[2 * g]));
                    isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, scv));
                }
            }
            s = f16_to_f32(rd16(blk + 208)) * scales[b];
        }
        acc[b & 7] = fmaf((float) hsum_i32(isum), s, acc[b & 7]);
    }
    return fold8(acc) - mins;
}

static int xgetbv_ok(uint64_t mask) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (((uint64_t) hi << 32 | lo) & mask) == mask;
}
#endif

/* Bit i set: variant i runs on this CPU (0 generic, 1 AVX2, 2 AVX-VNNI, 3 AVX-512 VNNI). */
int32_t ripcord_isa_mask(void) {
    int32_t mask = 1 << RK_GENERIC;
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return mask;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx || !fma || !f16c || !xgetbv_ok(0x6)) return mask;
    if (__get_cpuid_max(0, 0) < 7) return mask;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1, avx512bw = (b >> 30) & 1, avx512vl = (b >> 31) & 1;
    int avx512vnni = (c >> 11) & 1;
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    int avxvnni = (a1 >> 4) & 1;
    if (!avx2) return mask;
    mask |= 1 << RK_AVX2;
    if (avxvnni) mask |= 1 << RK_AVXVNNI;
    if (avx512f && avx512bw && avx512vl && avx512vnni && xgetbv_ok(0xE6)) mask |= 1 << RK_AVX512VNNI;
#endif
    return mask;
}

/*
 * out[r] = row r of the weights (at w + r * row_stride, k elements of ggml type `type`) times the activation row
 * qa, for r < rows, with variant `isa` (which the caller checked against ripcord_isa_mask). Returns 0, or -1 for
 * a type, isa or k it does not handle (nothing written).
 */
int32_t ripcord_matvec(int32_t isa, int32_t type, const uint8_t *w, int64_t row_stride, int32_t rows, int32_t k,
                       const uint8_t *qa, float *out) {
    int bs = type == T_Q8_0 || type == T_Q4_0 ? 32 : type == T_Q4_K || type == T_Q6_K ? 256 : 0;
    if (bs == 0 || k <= 0 || k % bs != 0 || isa < 0 || isa > RK_AVX512VNNI) return -1;
#if !defined(__x86_64__)
    if (isa != RK_GENERIC) return -1;
#endif
    int32_t first = 0;
#if defined(__x86_64__)
    if (bs == 32 && isa != RK_GENERIC) {
        /* rows i and half + i side by side (see SMALL_BLOCK_BODY); each row's result is its own, as alone */
        int32_t half = rows / 2;
        for (int32_t i = 0; i < half; i++) {
            const uint8_t *r0 = w + row_stride * i, *r1 = w + row_stride * (half + i);
            if (isa == RK_AVX512VNNI) {
                small_avx512vnni_pair(type, r0, r1, k, qa, out + i, out + half + i);
            } else if (isa == RK_AVXVNNI) {
                small_avxvnni_pair(type, r0, r1, k, qa, out + i, out + half + i);
            } else {
                small_avx2_pair(type, r0, r1, k, qa, out + i, out + half + i);
            }
        }
        first = 2 * half;
    }
#endif
    for (int32_t r = first; r < rows; r++) {
        const uint8_t *row = w + row_stride * r;
        float v;
#if defined(__x86_64__)
        if (isa == RK_GENERIC) {
            v = row_generic(type, row, k, qa);
        } else if (bs == 256) {
            v = row_k_avx2(type, row, k, qa);
        } else if (isa == RK_AVX512VNNI) {
            v = small_avx512vnni(type, row, k, qa);
        } else if (isa == RK_AVXVNNI) {
            v = small_avxvnni(type, row, k, qa);
        } else {
            v = small_avx2(type, row, k, qa);
        }
#else
        v = row_generic(type, row, k, qa);
#endif
        out[r] = v;
    }
    return 0;
}
