/*
 * What liboqs-python 0.16 needs from liboqs 0.9.0, 0.12.0 and 0.13.0 that they lack.
 *
 * 1. The one function it calls that all three lack:
 *
 * bool OQS_SIG_supports_ctx_str(const char *alg_name), as liboqs >= 0.14 defines it: true when
 * the named signature scheme accepts a context string.  liboqs 0.12 and 0.13 record the same
 * fact in the sig_with_ctx_support field of their OQS_SIG objects; liboqs 0.9 has no context
 * strings (and no OQS_VERSION_MINOR), so none is supported.  pqlab.liboqs.build compiles this
 * file and links it into liboqs.so beside the whole static liboqs (native/liboqs.map exports
 * every OQS_* symbol).
 */
#include <stdbool.h>
#include <stddef.h>

#include <oqs/oqs.h>

OQS_API bool OQS_SIG_supports_ctx_str(const char *alg_name) {
    if (alg_name == NULL) {
        return false;
    }
    OQS_SIG *sig = OQS_SIG_new(alg_name);
    if (sig == NULL) {
        return false;
    }
#if defined(OQS_VERSION_MINOR) && (OQS_VERSION_MAJOR > 0 || OQS_VERSION_MINOR >= 12)
    bool supported = sig->sig_with_ctx_support;
#else
    bool supported = false;
#endif
    OQS_SIG_free(sig);
    return supported;
}

/*
 * 2. liboqs 0.9 has no stateful signatures (sig_stfl.h came with 0.10), but liboqs-python looks their functions
 * up when it is imported.  Here they exist and say so: no stateful scheme is listed or enabled, none can be
 * made, and every other call fails with OQS_ERROR.  pqlab never calls them; without them `import oqs` fails.
 */
#if !defined(OQS_SIG_STFL_alg_xmss_sha256_h10)
OQS_API int OQS_SIG_STFL_alg_count(void) { return 0; }
OQS_API const char *OQS_SIG_STFL_alg_identifier(size_t i) { (void) i; return NULL; }
OQS_API int OQS_SIG_STFL_alg_is_enabled(const char *method_name) { (void) method_name; return 0; }
OQS_API void *OQS_SIG_STFL_new(const char *method_name) { (void) method_name; return NULL; }
OQS_API void OQS_SIG_STFL_free(void *sig) { (void) sig; }
OQS_API void *OQS_SIG_STFL_SECRET_KEY_new(const char *method_name) { (void) method_name; return NULL; }
OQS_API void OQS_SIG_STFL_SECRET_KEY_free(void *sk) { (void) sk; }
OQS_API void OQS_SIG_STFL_SECRET_KEY_SET_store_cb(void *sk, void *store_cb, void *context) {
    (void) sk; (void) store_cb; (void) context;
}
OQS_API OQS_STATUS OQS_SIG_STFL_SECRET_KEY_serialize(void *buf, void *len, const void *sk) {
    (void) buf; (void) len; (void) sk; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_SECRET_KEY_deserialize(void *sk, const void *buf, size_t len, void *context) {
    (void) sk; (void) buf; (void) len; (void) context; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_keypair(const void *sig, void *pk, void *sk) {
    (void) sig; (void) pk; (void) sk; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_sign(const void *sig, void *s, void *s_len, const void *m, size_t m_len, void *sk) {
    (void) sig; (void) s; (void) s_len; (void) m; (void) m_len; (void) sk; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_verify(const void *sig, const void *m, size_t m_len, const void *s, size_t s_len,
                                       const void *pk) {
    (void) sig; (void) m; (void) m_len; (void) s; (void) s_len; (void) pk; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_sigs_remaining(const void *sig, void *remain, const void *sk) {
    (void) sig; (void) remain; (void) sk; return OQS_ERROR;
}
OQS_API OQS_STATUS OQS_SIG_STFL_sigs_total(const void *sig, void *max, const void *sk) {
    (void) sig; (void) max; (void) sk; return OQS_ERROR;
}
#endif
