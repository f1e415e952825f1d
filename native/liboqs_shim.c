/*
 * The one function liboqs-python 0.16 calls that liboqs 0.13 lacks.
 *
 * bool OQS_SIG_supports_ctx_str(const char *alg_name), as liboqs >= 0.14 defines it: true when
 * the named signature scheme accepts a context string.  liboqs 0.13 records the same fact in
 * the sig_with_ctx_support field of its OQS_SIG objects.  pqlab.liboqs_build compiles this
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
    bool supported = sig->sig_with_ctx_support;
    OQS_SIG_free(sig);
    return supported;
}
