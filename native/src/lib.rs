//! liboqs as a shared library for liboqs-python.
//!
//! The static liboqs that `oqs-sys` builds is linked whole into this cdylib
//! (see build.rs), and the linker version script exports every `OQS_*` symbol.
//! liboqs-python 0.16 also calls `OQS_SIG_supports_ctx_str`, which liboqs 0.13
//! does not have; it is provided here from the `sig_with_ctx_support` field that
//! liboqs 0.13 does have.

use std::os::raw::c_char;

pub use oqs_sys;

/// `bool OQS_SIG_supports_ctx_str(const char *alg_name)` as liboqs >= 0.14 defines it:
/// true when the named signature scheme accepts a context string.
///
/// # Safety
/// `alg_name` must be a NUL-terminated C string (or NULL, which answers false).
#[no_mangle]
pub unsafe extern "C" fn OQS_SIG_supports_ctx_str(alg_name: *const c_char) -> bool {
    if alg_name.is_null() {
        return false;
    }
    let sig = oqs_sys::sig::OQS_SIG_new(alg_name);
    if sig.is_null() {
        return false;
    }
    let supported = (*sig).sig_with_ctx_support;
    oqs_sys::sig::OQS_SIG_free(sig);
    supported
}
