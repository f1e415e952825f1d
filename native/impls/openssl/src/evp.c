/*
 * pqlab's OpenSSL implementation program, C half: every EVP call and the timed batch loops.
 * The Rust half (main.rs) parses arguments, writes JSON and calls pq_bench_batch() once per batch,
 * so nothing but C and OpenSSL runs between the two clock_gettime(CLOCK_MONOTONIC) reads.
 *
 * What one timed call is (the EVP sequence a real user, e.g. OpenSSL's own TLS stack, makes for one
 * operation; every context is fresh per operation, nothing is reused across calls):
 *   keygen  EVP_PKEY_CTX_new_from_name + EVP_PKEY_keygen_init (+ group / bits) + EVP_PKEY_generate
 *           + EVP_PKEY_CTX_free, and EVP_PKEY_free of the previous call's key.
 *   encaps  ML-KEM: EVP_PKEY_CTX_new_from_pkey + EVP_PKEY_encapsulate_init + EVP_PKEY_encapsulate
 *           + EVP_PKEY_CTX_free, to a public key parsed once before the batch (from its raw bytes).
 *           DH: ephemeral keygen (as keygen) + EVP_PKEY_CTX_new_from_pkey + EVP_PKEY_derive_init
 *           + EVP_PKEY_derive_set_peer + EVP_PKEY_derive + EVP_PKEY_get_octet_string_param(encoded
 *           public key) + frees.
 *   decaps  ML-KEM: EVP_PKEY_CTX_new_from_pkey + EVP_PKEY_decapsulate_init + EVP_PKEY_decapsulate
 *           + EVP_PKEY_CTX_free, on the ciphertext bytes.
 *           DH: the peer key made from the ciphertext bytes as TLS does (EVP_PKEY_new +
 *           EVP_PKEY_copy_parameters + EVP_PKEY_set1_encoded_public_key) + derive as above.
 *   sign    EVP_MD_CTX_new + EVP_DigestSignInit_ex (md "SHA256" for ECDSA and RSA, NULL otherwise)
 *           + EVP_DigestSign into a buffer of EVP_PKEY_get_size bytes + EVP_MD_CTX_free.
 *   verify  EVP_MD_CTX_new + EVP_DigestVerifyInit_ex + EVP_DigestVerify + EVP_MD_CTX_free, with a
 *           public key parsed once before the batch from its bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/x509.h>

enum { F_MLKEM, F_MLDSA, F_SLHDSA, F_X25519, F_ECDH, F_ED25519, F_ECDSA, F_RSA };
enum { KIND_KEM = 0, KIND_SIG = 1 };
enum { OP_KEYGEN = 0, OP_ENCAPS = 1, OP_DECAPS = 2, OP_SIGN = 3, OP_VERIFY = 4 };
enum { SEEDED_KEYGEN = 1, SEEDED_ENCAPS = 2, SEEDED_SIGN = 4 };

typedef struct {
    const char *name; /* pqlab's name (native/PROTOCOL.md) */
    const char *evp;  /* OpenSSL's key type name */
    int fam;
    int kind;
    int bits; /* RSA modulus bits; SLH-DSA: n in bytes */
} alg_t;

static const alg_t ALGS[] = {
    {"ML-KEM-512", "ML-KEM-512", F_MLKEM, KIND_KEM, 0},
    {"ML-KEM-768", "ML-KEM-768", F_MLKEM, KIND_KEM, 0},
    {"ML-KEM-1024", "ML-KEM-1024", F_MLKEM, KIND_KEM, 0},
    {"ML-DSA-44", "ML-DSA-44", F_MLDSA, KIND_SIG, 0},
    {"ML-DSA-65", "ML-DSA-65", F_MLDSA, KIND_SIG, 0},
    {"ML-DSA-87", "ML-DSA-87", F_MLDSA, KIND_SIG, 0},
    {"SLH-DSA-SHA2-128s", "SLH-DSA-SHA2-128s", F_SLHDSA, KIND_SIG, 16},
    {"SLH-DSA-SHA2-128f", "SLH-DSA-SHA2-128f", F_SLHDSA, KIND_SIG, 16},
    {"SLH-DSA-SHA2-192s", "SLH-DSA-SHA2-192s", F_SLHDSA, KIND_SIG, 24},
    {"SLH-DSA-SHA2-192f", "SLH-DSA-SHA2-192f", F_SLHDSA, KIND_SIG, 24},
    {"SLH-DSA-SHA2-256s", "SLH-DSA-SHA2-256s", F_SLHDSA, KIND_SIG, 32},
    {"SLH-DSA-SHA2-256f", "SLH-DSA-SHA2-256f", F_SLHDSA, KIND_SIG, 32},
    {"SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-128s", F_SLHDSA, KIND_SIG, 16},
    {"SLH-DSA-SHAKE-128f", "SLH-DSA-SHAKE-128f", F_SLHDSA, KIND_SIG, 16},
    {"SLH-DSA-SHAKE-192s", "SLH-DSA-SHAKE-192s", F_SLHDSA, KIND_SIG, 24},
    {"SLH-DSA-SHAKE-192f", "SLH-DSA-SHAKE-192f", F_SLHDSA, KIND_SIG, 24},
    {"SLH-DSA-SHAKE-256s", "SLH-DSA-SHAKE-256s", F_SLHDSA, KIND_SIG, 32},
    {"SLH-DSA-SHAKE-256f", "SLH-DSA-SHAKE-256f", F_SLHDSA, KIND_SIG, 32},
    {"X25519", "X25519", F_X25519, KIND_KEM, 0},
    {"ECDH-P256", "EC", F_ECDH, KIND_KEM, 0},
    {"Ed25519", "ED25519", F_ED25519, KIND_SIG, 0},
    {"ECDSA-P256", "EC", F_ECDSA, KIND_SIG, 0},
    {"RSA-2048-PKCS1v15-sig", "RSA", F_RSA, KIND_SIG, 2048},
    {"RSA-3072-PKCS1v15-sig", "RSA", F_RSA, KIND_SIG, 3072},
};
#define NALGS ((int)(sizeof(ALGS) / sizeof(ALGS[0])))

#define PK_MAX 4096
#define CT_MAX 4096
#define SS_MAX 64

/* ---------- errors ---------- */

static char last_err[1024];

static void set_err(const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char buf[256] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(last_err, sizeof(last_err), "%s%s%s", what, e ? ": " : "", buf);
    ERR_clear_error();
}

const char *pq_last_error(void) { return last_err; }

/* ---------- library facts ---------- */

const char *pq_version(void) { return OpenSSL_version(OPENSSL_VERSION_STRING); }
const char *pq_version_text(void) { return OpenSSL_version(OPENSSL_VERSION); }
const char *pq_cflags(void) { return OpenSSL_version(OPENSSL_CFLAGS); }
const char *pq_cpu_settings(void)
{
    const char *s = OPENSSL_info(OPENSSL_INFO_CPU_SETTINGS);
    return s ? s : "";
}

int pq_alg_count(void) { return NALGS; }
const char *pq_alg_name(int i) { return (i >= 0 && i < NALGS) ? ALGS[i].name : NULL; }
int pq_alg_kind(int i) { return ALGS[i].kind; }
int pq_alg_find(const char *name)
{
    for (int i = 0; i < NALGS; i++)
        if (strcmp(ALGS[i].name, name) == 0)
            return i;
    return -1;
}

/* Seed lengths native/PROTOCOL.md defines; 0 = not seeded. */
size_t pq_seed_len(int a, int op)
{
    const alg_t *al = &ALGS[a];
    if (op == OP_KEYGEN) {
        switch (al->fam) {
        case F_MLKEM: return 64;
        case F_MLDSA: return 32;
        case F_SLHDSA: return 3 * (size_t)al->bits;
        case F_ED25519: return 32;
        default: return 0;
        }
    }
    if (op == OP_ENCAPS && al->fam == F_MLKEM)
        return 32;
    return 0;
}

static int settable_has(const OSSL_PARAM *p, const char *key)
{
    return p != NULL && OSSL_PARAM_locate_const(p, key) != NULL;
}

/*
 * Whether this build has the algorithm (a key-generation context can be made and initialised, and
 * the operation's method can be fetched), and which operations it lets a caller seed, as OpenSSL
 * itself declares them (settable parameters).  -1: not available.
 */
int pq_alg_probe(int a)
{
    const alg_t *al = &ALGS[a];
    int seeded = 0;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, al->evp, NULL);
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0) {
        EVP_PKEY_CTX_free(ctx);
        ERR_clear_error();
        return -1;
    }
    if ((al->fam == F_MLKEM || al->fam == F_MLDSA || al->fam == F_SLHDSA)
        && settable_has(EVP_PKEY_CTX_settable_params(ctx), "seed"))
        seeded |= SEEDED_KEYGEN;
    EVP_PKEY_CTX_free(ctx);
    if (al->fam == F_ED25519)
        seeded |= SEEDED_KEYGEN | SEEDED_SIGN; /* raw private key; Ed25519 is deterministic */
    if (al->fam == F_MLKEM) {
        EVP_KEM *kem = EVP_KEM_fetch(NULL, al->evp, NULL);
        if (kem == NULL) {
            ERR_clear_error();
            return -1;
        }
        if (settable_has(EVP_KEM_settable_ctx_params(kem), OSSL_KEM_PARAM_IKME))
            seeded |= SEEDED_ENCAPS;
        EVP_KEM_free(kem);
    } else if (al->kind == KIND_SIG) {
        const char *sn = al->fam == F_ECDSA ? "ECDSA" : al->evp;
        EVP_SIGNATURE *s = EVP_SIGNATURE_fetch(NULL, sn, NULL);
        if (s == NULL) {
            ERR_clear_error();
            return -1;
        }
        if ((al->fam == F_MLDSA || al->fam == F_SLHDSA)
            && settable_has(EVP_SIGNATURE_settable_ctx_params(s), OSSL_SIGNATURE_PARAM_DETERMINISTIC))
            seeded |= SEEDED_SIGN;
        EVP_SIGNATURE_free(s);
    } else {
        EVP_KEYEXCH *x = EVP_KEYEXCH_fetch(NULL, al->fam == F_ECDH ? "ECDH" : al->evp, NULL);
        if (x == NULL) {
            ERR_clear_error();
            return -1;
        }
        EVP_KEYEXCH_free(x);
    }
    return seeded;
}

/* ---------- one operation each (used by the timed loops and by serve) ---------- */

/* keygen; seed NULL: random. */
void *pq_keygen(int a, const uint8_t *seed, size_t seedlen)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *k = NULL;
    if (seed != NULL && al->fam == F_ED25519) {
        k = EVP_PKEY_new_raw_private_key_ex(NULL, "ED25519", NULL, seed, seedlen);
        if (k == NULL)
            set_err("EVP_PKEY_new_raw_private_key_ex");
        return k;
    }
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, al->evp, NULL);
    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0) {
        set_err("EVP_PKEY_keygen_init");
        goto end;
    }
    if (al->fam == F_ECDH || al->fam == F_ECDSA) {
        if (EVP_PKEY_CTX_set_group_name(ctx, "P-256") <= 0) {
            set_err("EVP_PKEY_CTX_set_group_name");
            goto end;
        }
    } else if (al->fam == F_RSA) {
        unsigned int bits = (unsigned int)al->bits, e = 65537;
        OSSL_PARAM p[3];
        p[0] = OSSL_PARAM_construct_uint(OSSL_PKEY_PARAM_RSA_BITS, &bits);
        p[1] = OSSL_PARAM_construct_uint(OSSL_PKEY_PARAM_RSA_E, &e);
        p[2] = OSSL_PARAM_construct_end();
        if (EVP_PKEY_CTX_set_params(ctx, p) <= 0) {
            set_err("EVP_PKEY_CTX_set_params(bits, e)");
            goto end;
        }
    }
    if (seed != NULL) {
        const char *key = al->fam == F_MLKEM ? OSSL_PKEY_PARAM_ML_KEM_SEED
                        : al->fam == F_MLDSA ? OSSL_PKEY_PARAM_ML_DSA_SEED
                                             : OSSL_PKEY_PARAM_SLH_DSA_SEED;
        OSSL_PARAM p[2];
        p[0] = OSSL_PARAM_construct_octet_string(key, (void *)seed, seedlen);
        p[1] = OSSL_PARAM_construct_end();
        if (EVP_PKEY_CTX_set_params(ctx, p) <= 0) {
            set_err("EVP_PKEY_CTX_set_params(seed)");
            goto end;
        }
    }
    if (EVP_PKEY_generate(ctx, &k) <= 0) {
        set_err("EVP_PKEY_generate");
        k = NULL;
    }
end:
    EVP_PKEY_CTX_free(ctx);
    return k;
}

void pq_key_free(void *k) { EVP_PKEY_free((EVP_PKEY *)k); }

/* The public key in the protocol's encoding; returns its length or -1. */
long pq_public_key(int a, void *vk, uint8_t *out, size_t cap)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *k = vk;
    size_t len = 0;
    if (al->fam == F_RSA) {
        int n = i2d_PUBKEY(k, NULL);
        if (n <= 0 || (size_t)n > cap) {
            set_err("i2d_PUBKEY");
            return -1;
        }
        uint8_t *p = out;
        i2d_PUBKEY(k, &p);
        return n;
    }
    /* ML-KEM/ML-DSA/SLH-DSA: FIPS encodings; X25519/Ed25519: raw; EC: uncompressed point. */
    if (!EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, out, cap, &len)
        && !EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, out, cap, &len)) {
        set_err("EVP_PKEY_get_octet_string_param(public key)");
        return -1;
    }
    ERR_clear_error();
    return (long)len;
}

/* The secret key as OpenSSL gives it; *fmt names its format.  Length or -1. */
long pq_secret_key(int a, void *vk, uint8_t *out, size_t cap, const char **fmt)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *k = vk;
    size_t len = 0;
    switch (al->fam) {
    case F_MLKEM:
    case F_MLDSA:
        *fmt = "seed";
        if (!EVP_PKEY_get_octet_string_param(k, al->fam == F_MLKEM ? OSSL_PKEY_PARAM_ML_KEM_SEED
                                                                  : OSSL_PKEY_PARAM_ML_DSA_SEED,
                                             out, cap, &len)) {
            set_err("EVP_PKEY_get_octet_string_param(seed)");
            return -1;
        }
        return (long)len;
    case F_SLHDSA:
    case F_X25519:
    case F_ED25519:
        *fmt = al->fam == F_SLHDSA ? "FIPS 205 sk (SK.seed || SK.prf || PK.seed || PK.root)" : "raw";
        len = cap;
        if (!EVP_PKEY_get_raw_private_key(k, out, &len)) {
            set_err("EVP_PKEY_get_raw_private_key");
            return -1;
        }
        return (long)len;
    case F_ECDH:
    case F_ECDSA: {
        BIGNUM *d = NULL;
        *fmt = "raw scalar (32 bytes, big-endian)";
        if (!EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_PRIV_KEY, &d) || cap < 32
            || BN_bn2binpad(d, out, 32) != 32) {
            BN_clear_free(d);
            set_err("EVP_PKEY_get_bn_param(priv)");
            return -1;
        }
        BN_clear_free(d);
        return 32;
    }
    case F_RSA: {
        *fmt = "PKCS#8 DER";
        PKCS8_PRIV_KEY_INFO *p8 = EVP_PKEY2PKCS8(k);
        int n = p8 ? i2d_PKCS8_PRIV_KEY_INFO(p8, NULL) : -1;
        if (n <= 0 || (size_t)n > cap) {
            PKCS8_PRIV_KEY_INFO_free(p8);
            set_err("i2d_PKCS8_PRIV_KEY_INFO");
            return -1;
        }
        uint8_t *p = out;
        i2d_PKCS8_PRIV_KEY_INFO(p8, &p);
        PKCS8_PRIV_KEY_INFO_free(p8);
        return n;
    }
    }
    return -1;
}

/* Expected public key / ciphertext lengths where the protocol fixes them (0: not fixed). */
static size_t mlkem_len(int a, int ct)
{
    static const size_t pk[] = {800, 1184, 1568}, c[] = {768, 1088, 1568};
    return ct ? c[a] : pk[a]; /* ML-KEM-512/768/1024 are ALGS[0..2] */
}

/* A public-only key from the protocol's encoding; NULL if malformed (checked as OpenSSL checks it). */
void *pq_parse_public(int a, const uint8_t *pk, size_t len)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *k = NULL;
    switch (al->fam) {
    case F_MLKEM:
        if (len != mlkem_len(a, 0)) {
            snprintf(last_err, sizeof(last_err), "public key is %zu bytes, %s takes %zu", len, al->name,
                     mlkem_len(a, 0));
            return NULL;
        }
        /* fall through */
    case F_MLDSA:
    case F_SLHDSA:
    case F_X25519:
    case F_ED25519:
        k = EVP_PKEY_new_raw_public_key_ex(NULL, al->evp, NULL, pk, len);
        if (k == NULL)
            set_err("EVP_PKEY_new_raw_public_key_ex");
        return k;
    case F_ECDH:
    case F_ECDSA: {
        if (len != 65 || pk[0] != 0x04) {
            snprintf(last_err, sizeof(last_err), "public key must be a 65-byte uncompressed P-256 point");
            return NULL;
        }
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
        OSSL_PARAM p[3];
        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"P-256", 0);
        p[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)pk, len);
        p[2] = OSSL_PARAM_construct_end();
        if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0
            || EVP_PKEY_fromdata(ctx, &k, EVP_PKEY_PUBLIC_KEY, p) <= 0) {
            set_err("EVP_PKEY_fromdata(P-256 public key)");
            k = NULL;
        }
        EVP_PKEY_CTX_free(ctx);
        return k;
    }
    case F_RSA: {
        const uint8_t *p = pk;
        k = d2i_PUBKEY_ex(NULL, &p, (long)len, NULL, NULL);
        if (k == NULL || p != pk + len || !EVP_PKEY_is_a(k, "RSA") || EVP_PKEY_get_bits(k) != al->bits) {
            set_err("d2i_PUBKEY_ex (DER SubjectPublicKeyInfo of an RSA key of the named size)");
            EVP_PKEY_free(k);
            return NULL;
        }
        return k;
    }
    }
    return NULL;
}

static int dh_derive(EVP_PKEY *own, EVP_PKEY *peer, uint8_t *ss, size_t *sslen)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, own, NULL);
    int ok = ctx != NULL && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_derive_set_peer(ctx, peer) > 0
             && EVP_PKEY_derive(ctx, ss, sslen) > 0;
    EVP_PKEY_CTX_free(ctx);
    return ok;
}

/* encaps to a parsed public key; m (32 bytes) or NULL.  1 ok, 0 failed.  *ctlen / *sslen: capacities in, lengths out. */
int pq_encaps(int a, void *vpub, const uint8_t *m, size_t mlen, uint8_t *ct, size_t *ctlen, uint8_t *ss,
              size_t *sslen)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *pub = vpub;
    if (al->fam == F_MLKEM) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pub, NULL);
        OSSL_PARAM p[2];
        p[0] = OSSL_PARAM_construct_octet_string(OSSL_KEM_PARAM_IKME, (void *)m, mlen);
        p[1] = OSSL_PARAM_construct_end();
        int ok = ctx != NULL && EVP_PKEY_encapsulate_init(ctx, m != NULL ? p : NULL) > 0
                 && EVP_PKEY_encapsulate(ctx, ct, ctlen, ss, sslen) > 0;
        EVP_PKEY_CTX_free(ctx);
        if (!ok)
            set_err("EVP_PKEY_encapsulate");
        return ok;
    }
    /* Diffie-Hellman as a KEM: ephemeral key pair, its public key is the ciphertext. */
    EVP_PKEY *eph = pq_keygen(a, NULL, 0);
    int ok = eph != NULL && dh_derive(eph, pub, ss, sslen)
             && EVP_PKEY_get_octet_string_param(eph, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, ct, *ctlen, ctlen);
    EVP_PKEY_free(eph);
    if (!ok)
        set_err("DH encaps (ephemeral keygen, derive, encoded public key)");
    return ok;
}

/* 1 ok, 0 failed. */
int pq_decaps(int a, void *vkey, const uint8_t *ct, size_t ctlen, uint8_t *ss, size_t *sslen)
{
    const alg_t *al = &ALGS[a];
    EVP_PKEY *key = vkey;
    if (al->fam == F_MLKEM) {
        EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
        int ok = ctx != NULL && EVP_PKEY_decapsulate_init(ctx, NULL) > 0
                 && EVP_PKEY_decapsulate(ctx, ss, sslen, ct, ctlen) > 0;
        EVP_PKEY_CTX_free(ctx);
        if (!ok)
            set_err("EVP_PKEY_decapsulate");
        return ok;
    }
    /* The peer's key from the ciphertext bytes, as OpenSSL's TLS 1.3 key share code makes it. */
    EVP_PKEY *peer = EVP_PKEY_new();
    int ok = peer != NULL && EVP_PKEY_copy_parameters(peer, key) > 0
             && EVP_PKEY_set1_encoded_public_key(peer, ct, ctlen) > 0 && dh_derive(key, peer, ss, sslen);
    EVP_PKEY_free(peer);
    if (!ok)
        set_err("DH decaps (the ciphertext as the peer's public key, derive)");
    return ok;
}

/* Length check where the protocol demands one: 1 good. */
int pq_ct_len_ok(int a, size_t len)
{
    switch (ALGS[a].fam) {
    case F_MLKEM: return len == mlkem_len(a, 1);
    case F_X25519: return len == 32;
    case F_ECDH: return len == 65;
    default: return 0;
    }
}

static const char *md_of(const alg_t *al)
{
    return (al->fam == F_ECDSA || al->fam == F_RSA) ? "SHA256" : NULL;
}

size_t pq_sig_max(void *vkey) { return (size_t)EVP_PKEY_get_size((EVP_PKEY *)vkey); }

/* sign; deterministic: ML-DSA rnd = 0, SLH-DSA opt_rand = PK.seed (Ed25519 always is).  1 ok. */
int pq_sign(int a, void *vkey, const uint8_t *msg, size_t mlen, int deterministic, uint8_t *sig, size_t *siglen)
{
    const alg_t *al = &ALGS[a];
    int det = 1;
    OSSL_PARAM p[2];
    p[0] = OSSL_PARAM_construct_int(OSSL_SIGNATURE_PARAM_DETERMINISTIC, &det);
    p[1] = OSSL_PARAM_construct_end();
    const OSSL_PARAM *params = (deterministic && (al->fam == F_MLDSA || al->fam == F_SLHDSA)) ? p : NULL;
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    int ok = m != NULL && EVP_DigestSignInit_ex(m, NULL, md_of(al), NULL, NULL, vkey, params) > 0
             && EVP_DigestSign(m, sig, siglen, msg, mlen) > 0;
    EVP_MD_CTX_free(m);
    if (!ok)
        set_err("EVP_DigestSign");
    return ok;
}

/* 1 valid, 0 not valid (or malformed), -1 the verification could not be set up. */
int pq_verify(int a, void *vpub, const uint8_t *msg, size_t mlen, const uint8_t *sig, size_t siglen)
{
    const alg_t *al = &ALGS[a];
    EVP_MD_CTX *m = EVP_MD_CTX_new();
    int r = -1;
    if (m != NULL && EVP_DigestVerifyInit_ex(m, NULL, md_of(al), NULL, NULL, vpub, NULL) > 0)
        r = EVP_DigestVerify(m, sig, siglen, msg, mlen) == 1 ? 1 : 0;
    EVP_MD_CTX_free(m);
    return r;
}

void pq_clear_errors(void)
{
    ERR_clear_error();
    last_err[0] = '\0';
}

/* ---------- timing ---------- */

typedef struct {
    int a;
    const alg_t *al;
    EVP_PKEY *kp;  /* the key pair */
    EVP_PKEY *pub; /* public-only key parsed from its bytes */
    uint8_t pk[PK_MAX];
    size_t pklen;
    uint8_t sk[PK_MAX * 2];
    size_t sklen;
    const char *skfmt;
    const uint8_t *msg;
    size_t msglen;
    uint8_t ct[CT_MAX], ss[SS_MAX];
    size_t ctlen, sslen;
    uint8_t *sig;
    size_t siglen, sigcap;
    /* the last output of the last batch */
    EVP_PKEY *last_key;
    uint8_t last_ct[CT_MAX], last_ss[SS_MAX];
    size_t last_ctlen, last_sslen;
    uint8_t *last_sig;
    size_t last_siglen;
    int last_valid;
} pq_bench;

typedef struct {
    long public_key, secret_key, ciphertext, shared_secret, signature;
    const char *secret_key_format;
} pq_sizes;

void pq_bench_free(pq_bench *b)
{
    if (b == NULL)
        return;
    EVP_PKEY_free(b->kp);
    EVP_PKEY_free(b->pub);
    EVP_PKEY_free(b->last_key);
    free(b->sig);
    free(b->last_sig);
    OPENSSL_cleanse(b->sk, sizeof(b->sk));
    free(b);
}

/*
 * Setup outside any timed region: a key pair, its public key (bytes and parsed back), for a KEM one
 * ciphertext and its shared secret, for a signature one signature of msg; then the tamper check
 * (ML-KEM: a flipped ciphertext decapsulates to another secret; signatures: a flipped signature does not
 * verify; DH skips it).  NULL on failure (pq_last_error says why).
 */
pq_bench *pq_bench_new(int a, const uint8_t *msg, size_t msglen)
{
    pq_bench *b = calloc(1, sizeof(*b));
    if (b == NULL)
        return NULL;
    b->a = a;
    b->al = &ALGS[a];
    b->msg = msg;
    b->msglen = msglen;
    long n;
    if ((b->kp = pq_keygen(a, NULL, 0)) == NULL)
        goto fail;
    if ((n = pq_public_key(a, b->kp, b->pk, sizeof(b->pk))) < 0)
        goto fail;
    b->pklen = (size_t)n;
    if ((n = pq_secret_key(a, b->kp, b->sk, sizeof(b->sk), &b->skfmt)) < 0)
        goto fail;
    b->sklen = (size_t)n;
    if ((b->pub = pq_parse_public(a, b->pk, b->pklen)) == NULL)
        goto fail;
    if (b->al->kind == KIND_KEM) {
        uint8_t ss2[SS_MAX];
        size_t ss2len = sizeof(ss2);
        b->ctlen = sizeof(b->ct);
        b->sslen = sizeof(b->ss);
        if (!pq_encaps(a, b->pub, NULL, 0, b->ct, &b->ctlen, b->ss, &b->sslen)) {
            set_err("setup encaps");
            goto fail;
        }
        if (!pq_decaps(a, b->kp, b->ct, b->ctlen, ss2, &ss2len) || ss2len != b->sslen
            || memcmp(ss2, b->ss, ss2len) != 0) {
            snprintf(last_err, sizeof(last_err), "setup: decaps does not give encaps's shared secret");
            goto fail;
        }
        if (b->al->fam == F_MLKEM) {
            uint8_t bad[CT_MAX];
            memcpy(bad, b->ct, b->ctlen);
            bad[0] ^= 1;
            ss2len = sizeof(ss2);
            if (!pq_decaps(a, b->kp, bad, b->ctlen, ss2, &ss2len)) {
                set_err("tamper check: decaps of a flipped ciphertext failed instead of rejecting implicitly");
                goto fail;
            }
            if (ss2len == b->sslen && memcmp(ss2, b->ss, ss2len) == 0) {
                snprintf(last_err, sizeof(last_err), "tamper check: a flipped ciphertext gave the same shared secret");
                goto fail;
            }
        }
    } else {
        b->sigcap = pq_sig_max(b->kp);
        b->sig = malloc(b->sigcap);
        b->last_sig = malloc(b->sigcap);
        if (b->sig == NULL || b->last_sig == NULL)
            goto fail;
        b->siglen = b->sigcap;
        if (!pq_sign(a, b->kp, msg, msglen, 0, b->sig, &b->siglen)) {
            set_err("setup sign");
            goto fail;
        }
        if (pq_verify(a, b->pub, msg, msglen, b->sig, b->siglen) != 1) {
            set_err("setup: the signature does not verify");
            goto fail;
        }
        b->sig[0] ^= 1;
        int r = pq_verify(a, b->pub, msg, msglen, b->sig, b->siglen);
        b->sig[0] ^= 1;
        if (r == 1) {
            snprintf(last_err, sizeof(last_err), "tamper check: a flipped signature verified");
            goto fail;
        }
    }
    ERR_clear_error();
    return b;
fail:
    pq_bench_free(b);
    return NULL;
}

void pq_bench_sizes(const pq_bench *b, pq_sizes *s)
{
    s->public_key = (long)b->pklen;
    s->secret_key = (long)b->sklen;
    s->secret_key_format = b->skfmt;
    s->ciphertext = b->al->kind == KIND_KEM ? (long)b->ctlen : -1;
    s->shared_secret = b->al->kind == KIND_KEM ? (long)b->sslen : -1;
    s->signature = b->al->kind == KIND_SIG ? (long)b->siglen : -1;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * One batch: `loops` consecutive calls of op between two reads of CLOCK_MONOTONIC.  *ns gets the
 * batch's nanoseconds, *errors the calls that returned an error.  The last output is kept for
 * pq_bench_check.  Returns 0, or -1 for an op this kind does not have.
 */
int pq_bench_batch(pq_bench *b, int op, uint64_t loops, uint64_t *ns, uint64_t *errors)
{
    const int a = b->a;
    uint64_t err = 0, t0, t1;
    switch (op) {
    case OP_KEYGEN: {
        EVP_PKEY *last = NULL;
        t0 = now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            EVP_PKEY *k = pq_keygen(a, NULL, 0);
            if (k == NULL) {
                err++;
                continue;
            }
            EVP_PKEY_free(last);
            last = k;
        }
        t1 = now_ns();
        EVP_PKEY_free(b->last_key);
        b->last_key = last;
        break;
    }
    case OP_ENCAPS:
        if (b->al->kind != KIND_KEM)
            return -1;
        t0 = now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            b->last_ctlen = sizeof(b->last_ct);
            b->last_sslen = sizeof(b->last_ss);
            if (!pq_encaps(a, b->pub, NULL, 0, b->last_ct, &b->last_ctlen, b->last_ss, &b->last_sslen))
                err++;
        }
        t1 = now_ns();
        break;
    case OP_DECAPS:
        if (b->al->kind != KIND_KEM)
            return -1;
        memset(b->last_ss, 0, sizeof(b->last_ss));
        t0 = now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            b->last_sslen = sizeof(b->last_ss);
            if (!pq_decaps(a, b->kp, b->ct, b->ctlen, b->last_ss, &b->last_sslen))
                err++;
        }
        t1 = now_ns();
        break;
    case OP_SIGN:
        if (b->al->kind != KIND_SIG)
            return -1;
        t0 = now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            b->last_siglen = b->sigcap;
            if (!pq_sign(a, b->kp, b->msg, b->msglen, 0, b->last_sig, &b->last_siglen))
                err++;
        }
        t1 = now_ns();
        break;
    case OP_VERIFY: {
        if (b->al->kind != KIND_SIG)
            return -1;
        int r = 0;
        t0 = now_ns();
        for (uint64_t i = 0; i < loops; i++) {
            r = pq_verify(a, b->pub, b->msg, b->msglen, b->sig, b->siglen);
            if (r != 1)
                err++;
        }
        t1 = now_ns();
        b->last_valid = r;
        break;
    }
    default:
        return -1;
    }
    *ns = t1 - t0;
    *errors = err;
    if (err) {
        if (last_err[0] == '\0')
            set_err(op == OP_VERIFY ? "verify returned false or failed" : "a call returned an error");
    } else {
        ERR_clear_error();
    }
    return 0;
}

/* Check the last output of the last batch (outside the timed region).  1 good, 0 bad (pq_last_error says why). */
int pq_bench_check(pq_bench *b, int op)
{
    const int a = b->a;
    uint8_t ss[SS_MAX];
    size_t sslen = sizeof(ss);
    switch (op) {
    case OP_KEYGEN: {
        /* A new key pair round-trips through its public key's bytes. */
        uint8_t pk[PK_MAX];
        long n;
        int ok = 0;
        if (b->last_key == NULL || (n = pq_public_key(a, b->last_key, pk, sizeof(pk))) < 0) {
            snprintf(last_err, sizeof(last_err), "keygen check: no key or no public key");
            return 0;
        }
        EVP_PKEY *pub = pq_parse_public(a, pk, (size_t)n);
        if (pub == NULL)
            return 0;
        if (b->al->kind == KIND_KEM) {
            uint8_t ct[CT_MAX], ss1[SS_MAX];
            size_t ctlen = sizeof(ct), ss1len = sizeof(ss1);
            ok = pq_encaps(a, pub, NULL, 0, ct, &ctlen, ss1, &ss1len)
                 && pq_decaps(a, b->last_key, ct, ctlen, ss, &sslen) && sslen == ss1len
                 && memcmp(ss, ss1, sslen) == 0;
        } else {
            size_t siglen = b->sigcap;
            uint8_t *sig = malloc(b->sigcap);
            ok = sig != NULL && pq_sign(a, b->last_key, b->msg, b->msglen, 0, sig, &siglen)
                 && pq_verify(a, pub, b->msg, b->msglen, sig, siglen) == 1;
            free(sig);
        }
        EVP_PKEY_free(pub);
        if (!ok)
            set_err("keygen check: the new key pair does not round-trip");
        return ok;
    }
    case OP_ENCAPS:
        if (!pq_decaps(a, b->kp, b->last_ct, b->last_ctlen, ss, &sslen) || sslen != b->last_sslen
            || memcmp(ss, b->last_ss, sslen) != 0) {
            set_err("encaps check: the ciphertext does not decapsulate to its shared secret");
            return 0;
        }
        return 1;
    case OP_DECAPS:
        if (b->last_sslen != b->sslen || memcmp(b->last_ss, b->ss, b->sslen) != 0) {
            snprintf(last_err, sizeof(last_err), "decaps check: the shared secret is not the expected one");
            return 0;
        }
        return 1;
    case OP_SIGN:
        if (pq_verify(a, b->pub, b->msg, b->msglen, b->last_sig, b->last_siglen) != 1) {
            set_err("sign check: the signature does not verify");
            return 0;
        }
        return 1;
    case OP_VERIFY:
        if (b->last_valid != 1) {
            snprintf(last_err, sizeof(last_err), "verify check: verify did not return true");
            return 0;
        }
        return 1;
    }
    return 0;
}
