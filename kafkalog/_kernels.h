/*
 * Small C helpers under kafkalog/_core.pyx: big-endian loads and stores, CRC-32 (legacy v0/v1
 * messages, IEEE polynomial as java.util.zip.CRC32 and zlib) and CRC-32C (v2 batches, Castagnoli
 * polynomial as org.apache.kafka.common.utils.Crc32C).
 *
 * CRC-32C uses the SSE4.2 crc32 instruction when the CPU has it.  One crc32q has a latency of three
 * cycles but a throughput of one per cycle, so a single dependency chain wastes two thirds of the
 * unit: the hardware path runs three chains over three adjacent blocks and joins them with a
 * "shift by n zero bytes" operator, precomputed as four 256-entry tables per block length.  Without
 * SSE4.2 (or off x86-64) a slicing-by-8 table does eight bytes per step.  Every entry point takes
 * and returns the finished CRC value (pre- and post-inverted), so calls chain: crc(a+b) ==
 * crc(b, crc(a)).
 *
 * kl_crc_init() must run once before any CRC call; _core.pyx calls it at import.
 */
#ifndef KAFKALOG_KERNELS_H
#define KAFKALOG_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

/* ---- big-endian access: memcpy keeps unaligned loads legal, the byte swap compiles to bswap/movbe */

static inline int64_t kl_get_i64(const unsigned char *p) {
    uint64_t v; memcpy(&v, p, 8); return (int64_t)__builtin_bswap64(v);
}
static inline int32_t kl_get_i32(const unsigned char *p) {
    uint32_t v; memcpy(&v, p, 4); return (int32_t)__builtin_bswap32(v);
}
static inline uint32_t kl_get_u32(const unsigned char *p) {
    uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v);
}
static inline int16_t kl_get_i16(const unsigned char *p) {
    uint16_t v; memcpy(&v, p, 2); return (int16_t)__builtin_bswap16(v);
}
static inline void kl_put_i64(unsigned char *p, int64_t x) {
    uint64_t v = __builtin_bswap64((uint64_t)x); memcpy(p, &v, 8);
}
static inline void kl_put_i32(unsigned char *p, int32_t x) {
    uint32_t v = __builtin_bswap32((uint32_t)x); memcpy(p, &v, 4);
}
static inline void kl_put_i16(unsigned char *p, int16_t x) {
    uint16_t v = __builtin_bswap16((uint16_t)x); memcpy(p, &v, 2);
}

/* ---- tables */

#define KL_POLY_CRC32  0xedb88320u   /* IEEE 802.3, reflected */
#define KL_POLY_CRC32C 0x82f63b78u   /* Castagnoli, reflected */

static uint32_t kl_crc32_table[8][256];
static uint32_t kl_crc32c_table[8][256];
/* Shift operators for the three-chain hardware loop: long blocks of 8 KiB, short ones of 256 bytes. */
#define KL_LONG 8192
#define KL_SHORT 256
static uint32_t kl_crc32c_long[4][256];
static uint32_t kl_crc32c_short[4][256];
static int kl_have_sse42 = 0;

static void kl_slicing_table(uint32_t table[8][256], uint32_t poly) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = table[0][n];
        for (int k = 1; k < 8; k++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[k][n] = c;
        }
    }
}

/* The raw register after feeding `len` zero bytes, starting from `reg` (no inversion). */
static uint32_t kl_crc32c_feed_zeros(uint32_t reg, size_t len) {
    while (len--) reg = kl_crc32c_table[0][reg & 0xff] ^ (reg >> 8);
    return reg;
}

/* Feeding zeros is linear in the register, so the operator is fixed by its effect on the 32 basis
 * bits; the four tables then apply it a byte of the register at a time. */
static void kl_shift_table(uint32_t table[4][256], size_t len) {
    uint32_t basis[32];
    for (int b = 0; b < 32; b++) basis[b] = kl_crc32c_feed_zeros((uint32_t)1 << b, len);
    for (int i = 0; i < 4; i++) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t v = 0;
            for (int b = 0; b < 8; b++)
                if (n & (1u << b)) v ^= basis[i * 8 + b];
            table[i][n] = v;
        }
    }
}

static inline uint32_t kl_shift(uint32_t table[4][256], uint32_t reg) {
    return table[0][reg & 0xff] ^ table[1][(reg >> 8) & 0xff] ^
           table[2][(reg >> 16) & 0xff] ^ table[3][reg >> 24];
}

/* ---- software CRCs (slicing-by-8) on the raw register */

static uint32_t kl_crc_sw(uint32_t table[8][256], uint32_t reg, const unsigned char *p, size_t len) {
    while (len && ((uintptr_t)p & 7)) { reg = table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8); len--; }
    while (len >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4); memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo); hi = __builtin_bswap32(hi);
#endif
        lo ^= reg;
        reg = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8; len -= 8;
    }
    while (len--) reg = table[0][(reg ^ *p++) & 0xff] ^ (reg >> 8);
    return reg;
}

/* ---- hardware CRC-32C */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KL_HAVE_HW_PATH 1
__attribute__((target("sse4.2")))
static uint32_t kl_crc32c_hw(uint32_t reg, const unsigned char *p, size_t len) {
    uint64_t c0 = reg;
    while (len && ((uintptr_t)p & 7)) { c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++); len--; }
    while (len >= 3 * KL_LONG) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + KL_LONG;
        do {
            uint64_t a, b, c;
            memcpy(&a, p, 8); memcpy(&b, p + KL_LONG, 8); memcpy(&c, p + 2 * KL_LONG, 8);
            c0 = __builtin_ia32_crc32di(c0, a);
            c1 = __builtin_ia32_crc32di(c1, b);
            c2 = __builtin_ia32_crc32di(c2, c);
            p += 8;
        } while (p < end);
        c0 = kl_shift(kl_crc32c_long, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = kl_shift(kl_crc32c_long, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * KL_LONG; len -= 3 * KL_LONG;
    }
    while (len >= 3 * KL_SHORT) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *end = p + KL_SHORT;
        do {
            uint64_t a, b, c;
            memcpy(&a, p, 8); memcpy(&b, p + KL_SHORT, 8); memcpy(&c, p + 2 * KL_SHORT, 8);
            c0 = __builtin_ia32_crc32di(c0, a);
            c1 = __builtin_ia32_crc32di(c1, b);
            c2 = __builtin_ia32_crc32di(c2, c);
            p += 8;
        } while (p < end);
        c0 = kl_shift(kl_crc32c_short, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = kl_shift(kl_crc32c_short, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * KL_SHORT; len -= 3 * KL_SHORT;
    }
    while (len >= 8) {
        uint64_t a; memcpy(&a, p, 8);
        c0 = __builtin_ia32_crc32di(c0, a);
        p += 8; len -= 8;
    }
    while (len--) c0 = __builtin_ia32_crc32qi((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#else
#define KL_HAVE_HW_PATH 0
#endif

static void kl_md5_init(void);

static void kl_crc_init(void) {
    kl_slicing_table(kl_crc32_table, KL_POLY_CRC32);
    kl_slicing_table(kl_crc32c_table, KL_POLY_CRC32C);
    kl_shift_table(kl_crc32c_long, KL_LONG);
    kl_shift_table(kl_crc32c_short, KL_SHORT);
    kl_md5_init();
#if KL_HAVE_HW_PATH
    __builtin_cpu_init();
    kl_have_sse42 = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

/* Set by tests and benchmarks to time the table path on a machine that has SSE4.2. */
static void kl_crc32c_force_software(int on) {
#if KL_HAVE_HW_PATH
    if (on) kl_have_sse42 = 0;
    else { __builtin_cpu_init(); kl_have_sse42 = __builtin_cpu_supports("sse4.2") ? 1 : 0; }
#else
    (void)on;
#endif
}

static inline uint32_t kl_crc32c(uint32_t crc, const unsigned char *p, size_t len) {
    uint32_t reg = ~crc;
#if KL_HAVE_HW_PATH
    if (kl_have_sse42) return ~kl_crc32c_hw(reg, p, len);
#endif
    return ~kl_crc_sw(kl_crc32c_table, reg, p, len);
}

static inline uint32_t kl_crc32(uint32_t crc, const unsigned char *p, size_t len) {
    return ~kl_crc_sw(kl_crc32_table, ~crc, p, len);
}

/* ---- a prefetch hint (the offset map's first probe of the next keys, while this key is handled) */
static inline void kl_prefetch(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 1, 1);
#else
    (void)p;
#endif
}

/* ---- a read prefetch hint, kept in every cache level (the index search's next probes, asked for before this
   probe's entry arrives) */
static inline void kl_prefetch_read(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 0, 3);
#else
    (void)p;
#endif
}

/* ---- MD5 (RFC 1321), for SkimpyOffsetMap's key hashes.
 * 64 steps per 64-byte block in four rounds of sixteen; each step mixes one message word into the
 * four-word state with a round function, a constant K[i] = floor(|sin(i + 1)| * 2^32) and a left
 * rotation.  The message is padded with 0x80, zeros and its bit length (little-endian) to a whole
 * number of blocks; the digest is the final state, little-endian. */

static uint32_t kl_md5_k[64];
static const unsigned char kl_md5_shift[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

static void kl_md5_init(void) {
    for (int i = 0; i < 64; i++) kl_md5_k[i] = (uint32_t)(fabs(sin((double)(i + 1))) * 4294967296.0);
}

static inline uint32_t kl_get_u32le(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* One 64-byte block.  The steps are spelled out (as RFC 1321's reference does) so the compiler keeps the
 * state in registers; F and G use the equivalent forms d ^ (b & (c ^ d)) and c ^ (d & (b ^ c)), one
 * operation shorter than the definitions. */
#define KL_MD5_F(b, c, d) ((d) ^ ((b) & ((c) ^ (d))))
#define KL_MD5_G(b, c, d) ((c) ^ ((d) & ((b) ^ (c))))
#define KL_MD5_H(b, c, d) ((b) ^ (c) ^ (d))
#define KL_MD5_I(b, c, d) ((c) ^ ((b) | ~(d)))
#define KL_MD5_STEP(f, a, b, c, d, i, g) \
    do { \
        (a) += f((b), (c), (d)) + m[(g)] + kl_md5_k[(i)]; \
        (a) = ((a) << kl_md5_shift[(i)]) | ((a) >> (32 - kl_md5_shift[(i)])); \
        (a) += (b); \
    } while (0)

static void kl_md5_block(uint32_t h[4], const unsigned char *block) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++) m[i] = kl_get_u32le(block + 4 * i);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    /* Round 1: message words in order. */
    KL_MD5_STEP(KL_MD5_F, a, b, c, d, 0, 0);   KL_MD5_STEP(KL_MD5_F, d, a, b, c, 1, 1);
    KL_MD5_STEP(KL_MD5_F, c, d, a, b, 2, 2);   KL_MD5_STEP(KL_MD5_F, b, c, d, a, 3, 3);
    KL_MD5_STEP(KL_MD5_F, a, b, c, d, 4, 4);   KL_MD5_STEP(KL_MD5_F, d, a, b, c, 5, 5);
    KL_MD5_STEP(KL_MD5_F, c, d, a, b, 6, 6);   KL_MD5_STEP(KL_MD5_F, b, c, d, a, 7, 7);
    KL_MD5_STEP(KL_MD5_F, a, b, c, d, 8, 8);   KL_MD5_STEP(KL_MD5_F, d, a, b, c, 9, 9);
    KL_MD5_STEP(KL_MD5_F, c, d, a, b, 10, 10); KL_MD5_STEP(KL_MD5_F, b, c, d, a, 11, 11);
    KL_MD5_STEP(KL_MD5_F, a, b, c, d, 12, 12); KL_MD5_STEP(KL_MD5_F, d, a, b, c, 13, 13);
    KL_MD5_STEP(KL_MD5_F, c, d, a, b, 14, 14); KL_MD5_STEP(KL_MD5_F, b, c, d, a, 15, 15);
    /* Round 2: word (5i + 1) mod 16. */
    KL_MD5_STEP(KL_MD5_G, a, b, c, d, 16, 1);  KL_MD5_STEP(KL_MD5_G, d, a, b, c, 17, 6);
    KL_MD5_STEP(KL_MD5_G, c, d, a, b, 18, 11); KL_MD5_STEP(KL_MD5_G, b, c, d, a, 19, 0);
    KL_MD5_STEP(KL_MD5_G, a, b, c, d, 20, 5);  KL_MD5_STEP(KL_MD5_G, d, a, b, c, 21, 10);
    KL_MD5_STEP(KL_MD5_G, c, d, a, b, 22, 15); KL_MD5_STEP(KL_MD5_G, b, c, d, a, 23, 4);
    KL_MD5_STEP(KL_MD5_G, a, b, c, d, 24, 9);  KL_MD5_STEP(KL_MD5_G, d, a, b, c, 25, 14);
    KL_MD5_STEP(KL_MD5_G, c, d, a, b, 26, 3);  KL_MD5_STEP(KL_MD5_G, b, c, d, a, 27, 8);
    KL_MD5_STEP(KL_MD5_G, a, b, c, d, 28, 13); KL_MD5_STEP(KL_MD5_G, d, a, b, c, 29, 2);
    KL_MD5_STEP(KL_MD5_G, c, d, a, b, 30, 7);  KL_MD5_STEP(KL_MD5_G, b, c, d, a, 31, 12);
    /* Round 3: word (3i + 5) mod 16. */
    KL_MD5_STEP(KL_MD5_H, a, b, c, d, 32, 5);  KL_MD5_STEP(KL_MD5_H, d, a, b, c, 33, 8);
    KL_MD5_STEP(KL_MD5_H, c, d, a, b, 34, 11); KL_MD5_STEP(KL_MD5_H, b, c, d, a, 35, 14);
    KL_MD5_STEP(KL_MD5_H, a, b, c, d, 36, 1);  KL_MD5_STEP(KL_MD5_H, d, a, b, c, 37, 4);
    KL_MD5_STEP(KL_MD5_H, c, d, a, b, 38, 7);  KL_MD5_STEP(KL_MD5_H, b, c, d, a, 39, 10);
    KL_MD5_STEP(KL_MD5_H, a, b, c, d, 40, 13); KL_MD5_STEP(KL_MD5_H, d, a, b, c, 41, 0);
    KL_MD5_STEP(KL_MD5_H, c, d, a, b, 42, 3);  KL_MD5_STEP(KL_MD5_H, b, c, d, a, 43, 6);
    KL_MD5_STEP(KL_MD5_H, a, b, c, d, 44, 9);  KL_MD5_STEP(KL_MD5_H, d, a, b, c, 45, 12);
    KL_MD5_STEP(KL_MD5_H, c, d, a, b, 46, 15); KL_MD5_STEP(KL_MD5_H, b, c, d, a, 47, 2);
    /* Round 4: word 7i mod 16. */
    KL_MD5_STEP(KL_MD5_I, a, b, c, d, 48, 0);  KL_MD5_STEP(KL_MD5_I, d, a, b, c, 49, 7);
    KL_MD5_STEP(KL_MD5_I, c, d, a, b, 50, 14); KL_MD5_STEP(KL_MD5_I, b, c, d, a, 51, 5);
    KL_MD5_STEP(KL_MD5_I, a, b, c, d, 52, 12); KL_MD5_STEP(KL_MD5_I, d, a, b, c, 53, 3);
    KL_MD5_STEP(KL_MD5_I, c, d, a, b, 54, 10); KL_MD5_STEP(KL_MD5_I, b, c, d, a, 55, 1);
    KL_MD5_STEP(KL_MD5_I, a, b, c, d, 56, 8);  KL_MD5_STEP(KL_MD5_I, d, a, b, c, 57, 15);
    KL_MD5_STEP(KL_MD5_I, c, d, a, b, 58, 6);  KL_MD5_STEP(KL_MD5_I, b, c, d, a, 59, 13);
    KL_MD5_STEP(KL_MD5_I, a, b, c, d, 60, 4);  KL_MD5_STEP(KL_MD5_I, d, a, b, c, 61, 11);
    KL_MD5_STEP(KL_MD5_I, c, d, a, b, 62, 2);  KL_MD5_STEP(KL_MD5_I, b, c, d, a, 63, 9);
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
}

static void kl_md5(const unsigned char *p, size_t n, unsigned char out[16]);

/* Two short messages (up to 55 bytes: one padded block each) hashed together, their steps interleaved.
 * Each MD5 is one long chain of dependent additions; two independent chains let the CPU execute both at
 * once, which is where the offset map's time goes for the short keys it hashes. */
#define KL_MD5_STEP2(f, a, b, c, d, A, B, C, D, i, g) \
    do { \
        (a) += f((b), (c), (d)) + m1[(g)] + kl_md5_k[(i)]; \
        (A) += f((B), (C), (D)) + m2[(g)] + kl_md5_k[(i)]; \
        (a) = ((a) << kl_md5_shift[(i)]) | ((a) >> (32 - kl_md5_shift[(i)])); \
        (A) = ((A) << kl_md5_shift[(i)]) | ((A) >> (32 - kl_md5_shift[(i)])); \
        (a) += (b); (A) += (B); \
    } while (0)

static inline void kl_md5_pad_short(const unsigned char *p, size_t n, uint32_t m[16]) {
    unsigned char block[64];
    memcpy(block, p, n);
    block[n] = 0x80;
    memset(block + n + 1, 0, 56 - n - 1);
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) block[56 + i] = (unsigned char)(bits >> (8 * i));
    for (int i = 0; i < 16; i++) m[i] = kl_get_u32le(block + 4 * i);
}

static inline void kl_md5_out(uint32_t a, uint32_t b, uint32_t c, uint32_t d, unsigned char out[16]) {
    uint32_t h[4] = {0x67452301u + a, 0xefcdab89u + b, 0x98badcfeu + c, 0x10325476u + d};
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (unsigned char)h[i];
        out[4 * i + 1] = (unsigned char)(h[i] >> 8);
        out[4 * i + 2] = (unsigned char)(h[i] >> 16);
        out[4 * i + 3] = (unsigned char)(h[i] >> 24);
    }
}

static void kl_md5_short_x2(const unsigned char *p1, size_t n1, const unsigned char *p2, size_t n2,
                            unsigned char out1[16], unsigned char out2[16]) {
    uint32_t m1[16], m2[16];
    kl_md5_pad_short(p1, n1, m1);
    kl_md5_pad_short(p2, n2, m2);
    uint32_t a = 0x67452301u, b = 0xefcdab89u, c = 0x98badcfeu, d = 0x10325476u;
    uint32_t A = a, B = b, C = c, D = d;
    KL_MD5_STEP2(KL_MD5_F, a, b, c, d, A, B, C, D, 0, 0);   KL_MD5_STEP2(KL_MD5_F, d, a, b, c, D, A, B, C, 1, 1);
    KL_MD5_STEP2(KL_MD5_F, c, d, a, b, C, D, A, B, 2, 2);   KL_MD5_STEP2(KL_MD5_F, b, c, d, a, B, C, D, A, 3, 3);
    KL_MD5_STEP2(KL_MD5_F, a, b, c, d, A, B, C, D, 4, 4);   KL_MD5_STEP2(KL_MD5_F, d, a, b, c, D, A, B, C, 5, 5);
    KL_MD5_STEP2(KL_MD5_F, c, d, a, b, C, D, A, B, 6, 6);   KL_MD5_STEP2(KL_MD5_F, b, c, d, a, B, C, D, A, 7, 7);
    KL_MD5_STEP2(KL_MD5_F, a, b, c, d, A, B, C, D, 8, 8);   KL_MD5_STEP2(KL_MD5_F, d, a, b, c, D, A, B, C, 9, 9);
    KL_MD5_STEP2(KL_MD5_F, c, d, a, b, C, D, A, B, 10, 10); KL_MD5_STEP2(KL_MD5_F, b, c, d, a, B, C, D, A, 11, 11);
    KL_MD5_STEP2(KL_MD5_F, a, b, c, d, A, B, C, D, 12, 12); KL_MD5_STEP2(KL_MD5_F, d, a, b, c, D, A, B, C, 13, 13);
    KL_MD5_STEP2(KL_MD5_F, c, d, a, b, C, D, A, B, 14, 14); KL_MD5_STEP2(KL_MD5_F, b, c, d, a, B, C, D, A, 15, 15);
    KL_MD5_STEP2(KL_MD5_G, a, b, c, d, A, B, C, D, 16, 1);  KL_MD5_STEP2(KL_MD5_G, d, a, b, c, D, A, B, C, 17, 6);
    KL_MD5_STEP2(KL_MD5_G, c, d, a, b, C, D, A, B, 18, 11); KL_MD5_STEP2(KL_MD5_G, b, c, d, a, B, C, D, A, 19, 0);
    KL_MD5_STEP2(KL_MD5_G, a, b, c, d, A, B, C, D, 20, 5);  KL_MD5_STEP2(KL_MD5_G, d, a, b, c, D, A, B, C, 21, 10);
    KL_MD5_STEP2(KL_MD5_G, c, d, a, b, C, D, A, B, 22, 15); KL_MD5_STEP2(KL_MD5_G, b, c, d, a, B, C, D, A, 23, 4);
    KL_MD5_STEP2(KL_MD5_G, a, b, c, d, A, B, C, D, 24, 9);  KL_MD5_STEP2(KL_MD5_G, d, a, b, c, D, A, B, C, 25, 14);
    KL_MD5_STEP2(KL_MD5_G, c, d, a, b, C, D, A, B, 26, 3);  KL_MD5_STEP2(KL_MD5_G, b, c, d, a, B, C, D, A, 27, 8);
    KL_MD5_STEP2(KL_MD5_G, a, b, c, d, A, B, C, D, 28, 13); KL_MD5_STEP2(KL_MD5_G, d, a, b, c, D, A, B, C, 29, 2);
    KL_MD5_STEP2(KL_MD5_G, c, d, a, b, C, D, A, B, 30, 7);  KL_MD5_STEP2(KL_MD5_G, b, c, d, a, B, C, D, A, 31, 12);
    KL_MD5_STEP2(KL_MD5_H, a, b, c, d, A, B, C, D, 32, 5);  KL_MD5_STEP2(KL_MD5_H, d, a, b, c, D, A, B, C, 33, 8);
    KL_MD5_STEP2(KL_MD5_H, c, d, a, b, C, D, A, B, 34, 11); KL_MD5_STEP2(KL_MD5_H, b, c, d, a, B, C, D, A, 35, 14);
    KL_MD5_STEP2(KL_MD5_H, a, b, c, d, A, B, C, D, 36, 1);  KL_MD5_STEP2(KL_MD5_H, d, a, b, c, D, A, B, C, 37, 4);
    KL_MD5_STEP2(KL_MD5_H, c, d, a, b, C, D, A, B, 38, 7);  KL_MD5_STEP2(KL_MD5_H, b, c, d, a, B, C, D, A, 39, 10);
    KL_MD5_STEP2(KL_MD5_H, a, b, c, d, A, B, C, D, 40, 13); KL_MD5_STEP2(KL_MD5_H, d, a, b, c, D, A, B, C, 41, 0);
    KL_MD5_STEP2(KL_MD5_H, c, d, a, b, C, D, A, B, 42, 3);  KL_MD5_STEP2(KL_MD5_H, b, c, d, a, B, C, D, A, 43, 6);
    KL_MD5_STEP2(KL_MD5_H, a, b, c, d, A, B, C, D, 44, 9);  KL_MD5_STEP2(KL_MD5_H, d, a, b, c, D, A, B, C, 45, 12);
    KL_MD5_STEP2(KL_MD5_H, c, d, a, b, C, D, A, B, 46, 15); KL_MD5_STEP2(KL_MD5_H, b, c, d, a, B, C, D, A, 47, 2);
    KL_MD5_STEP2(KL_MD5_I, a, b, c, d, A, B, C, D, 48, 0);  KL_MD5_STEP2(KL_MD5_I, d, a, b, c, D, A, B, C, 49, 7);
    KL_MD5_STEP2(KL_MD5_I, c, d, a, b, C, D, A, B, 50, 14); KL_MD5_STEP2(KL_MD5_I, b, c, d, a, B, C, D, A, 51, 5);
    KL_MD5_STEP2(KL_MD5_I, a, b, c, d, A, B, C, D, 52, 12); KL_MD5_STEP2(KL_MD5_I, d, a, b, c, D, A, B, C, 53, 3);
    KL_MD5_STEP2(KL_MD5_I, c, d, a, b, C, D, A, B, 54, 10); KL_MD5_STEP2(KL_MD5_I, b, c, d, a, B, C, D, A, 55, 1);
    KL_MD5_STEP2(KL_MD5_I, a, b, c, d, A, B, C, D, 56, 8);  KL_MD5_STEP2(KL_MD5_I, d, a, b, c, D, A, B, C, 57, 15);
    KL_MD5_STEP2(KL_MD5_I, c, d, a, b, C, D, A, B, 58, 6);  KL_MD5_STEP2(KL_MD5_I, b, c, d, a, B, C, D, A, 59, 13);
    KL_MD5_STEP2(KL_MD5_I, a, b, c, d, A, B, C, D, 60, 4);  KL_MD5_STEP2(KL_MD5_I, d, a, b, c, D, A, B, C, 61, 11);
    KL_MD5_STEP2(KL_MD5_I, c, d, a, b, C, D, A, B, 62, 2);  KL_MD5_STEP2(KL_MD5_I, b, c, d, a, B, C, D, A, 63, 9);
    kl_md5_out(a, b, c, d, out1);
    kl_md5_out(A, B, C, D, out2);
}

/* The MD5s of a group of keys (``n`` pointers and lengths): short keys two at a time, the rest alone. */
static void kl_md5_many(const unsigned char *const *keys, const int32_t *lens, int n, unsigned char (*out)[16]) {
    int pending = -1;
    for (int i = 0; i < n; i++) {
        if (lens[i] < 0) continue;
        if (lens[i] > 55) { kl_md5(keys[i], (size_t)lens[i], out[i]); continue; }
        if (pending < 0) { pending = i; continue; }
        kl_md5_short_x2(keys[pending], (size_t)lens[pending], keys[i], (size_t)lens[i], out[pending], out[i]);
        pending = -1;
    }
    if (pending >= 0) kl_md5(keys[pending], (size_t)lens[pending], out[pending]);
}

static void kl_md5(const unsigned char *p, size_t n, unsigned char out[16]) {
    uint32_t h[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
    size_t full = n & ~(size_t)63;
    for (size_t i = 0; i < full; i += 64) kl_md5_block(h, p + i);
    unsigned char tail[128];
    size_t rest = n - full;
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t tail_len = rest < 56 ? 64 : 128;
    memset(tail + rest + 1, 0, tail_len - rest - 1);
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) tail[tail_len - 8 + i] = (unsigned char)(bits >> (8 * i));
    kl_md5_block(h, tail);
    if (tail_len == 128) kl_md5_block(h, tail + 64);
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (unsigned char)h[i];
        out[4 * i + 1] = (unsigned char)(h[i] >> 8);
        out[4 * i + 2] = (unsigned char)(h[i] >> 16);
        out[4 * i + 3] = (unsigned char)(h[i] >> 24);
    }
}

#endif
