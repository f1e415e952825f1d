/* pqlab's taint harness: run one liboqs operation under valgrind's memcheck with its secret key marked
 * "undefined", so that memcheck reports every branch and every memory address that depends on it (the
 * ctgrind idea of Adam Langley; TIMECOP for SUPERCOP).  pqlab/checks/taint.py compiles it into pqlab's cache and runs
 *
 *     valgrind --tool=memcheck ... taint_harness <libpath> kem|sig <algorithm>
 *     valgrind --tool=memcheck ... taint_harness - control leaky|clean
 *     valgrind --tool=memcheck ... taint_harness <libpath> function <symbol> <nbytes>
 *
 * kem:  keypair and encapsulation run untainted; then the secret key is marked undefined and decapsulated twice,
 *       with the valid ciphertext and with one whose first byte is flipped (implicit rejection returns another
 *       key, explicit rejection an error status: either is accepted, the valid key is not).
 * sig:  keypair runs untainted; then the secret key is marked undefined and one message is signed.
 * control (no liboqs): "leaky" branches on a secret byte and indexes a table with it, which memcheck must
 *       report; "clean" selects between two values with a mask, which it must not.
 * function (any shared library, not liboqs): calls void symbol(uint8_t *out, const uint8_t *secret, size_t n)
 *       once, with n secret bytes 0, 1, 2 ... marked undefined and n bytes of out, then marks out defined.
 *
 * Bytes of the secret key that are copies of public values stay defined (public_parts: the public key and
 * H(ek) inside an ML-KEM secret key, the seed rho and tr = H(pk) inside an ML-DSA one).  Outputs, the status
 * returned included, are marked defined before the harness checks them: the shared secret must be the
 * encapsulated one (valid ciphertext) and must not be (altered one), the signature must verify.
 *
 * liboqs is reached with dlopen and its exported functions; of the OQS_KEM and OQS_SIG structs only the lengths
 * are read, at the same offset in every release from 0.9 to 0.13 (one compiled harness serves every build).
 * stdout: one JSON line; errors also name themselves there.  Exit 0 ok, 2 bad request, 3 a check failed,
 * 4 liboqs could not be loaded.  VALGRIND_COUNT_ERRORS gives memcheck's count after each phase.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/memcheck.h>

struct kem_head { /* the first fields of OQS_KEM */
	const char *method_name, *alg_version;
	uint8_t claimed_nist_level, ind_cca;
	size_t length_public_key, length_secret_key, length_ciphertext, length_shared_secret;
};
struct sig_head { /* the first fields of OQS_SIG (0.9: one bool before the lengths, 0.13: three) */
	const char *method_name, *alg_version;
	uint8_t claimed_nist_level, flags[3];
	size_t length_public_key, length_secret_key, length_signature;
};
_Static_assert(offsetof(struct kem_head, length_public_key) == 3 * sizeof(void *), "OQS_KEM layout");
_Static_assert(offsetof(struct sig_head, length_public_key) == 3 * sizeof(void *), "OQS_SIG layout");

static void *lib;
static int phases;
static char phase_json[512];

static void *sym(const char *name) {
	void *f = dlsym(lib, name);
	if (f == NULL) {
		printf("{\"error\": \"liboqs lacks %s\", \"status\": 4}\n", name);
		exit(4);
	}
	return f;
}

static void fail(int code, const char *what) {
	printf("{\"error\": \"%s\", \"status\": %d, \"phases\": {%s}}\n", what, code, phase_json);
	exit(code);
}

static void phase_done(const char *name) { /* memcheck's error count so far, after phase `name` */
	size_t used = strlen(phase_json);
	snprintf(phase_json + used, sizeof phase_json - used, "%s\"%s\": %u", phases++ ? ", " : "", name,
	         (unsigned)VALGRIND_COUNT_ERRORS);
}

static void *zalloc(size_t n) {
	void *p = calloc(n ? n : 1, 1);
	if (p == NULL)
		fail(3, "out of memory");
	return p;
}

/* SHA3-256 and SHAKE256 (FIPS 202), only to recognise hashes of the public key stored in a secret key: liboqs
 * does not export its own.  Keccak-f[1600] with lanes indexed x + 5y. */
static uint64_t rotl(uint64_t v, int n) {
	return n ? (v << n) | (v >> (64 - n)) : v;
}

static void keccak_f(uint64_t a[25]) {
	static const uint64_t rc[24] = {
	    0x0000000000000001, 0x0000000000008082, 0x800000000000808a, 0x8000000080008000, 0x000000000000808b,
	    0x0000000080000001, 0x8000000080008081, 0x8000000000008009, 0x000000000000008a, 0x0000000000000088,
	    0x0000000080008009, 0x000000008000000a, 0x000000008000808b, 0x800000000000008b, 0x8000000000008089,
	    0x8000000000008003, 0x8000000000008002, 0x8000000000000080, 0x000000000000800a, 0x800000008000000a,
	    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008};
	static const int rot[25] = {0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39,
	                            41, 45, 15, 21, 8, 18, 2, 61, 56, 14};
	uint64_t c[5], b[25];
	for (int round = 0; round < 24; round++) {
		for (int x = 0; x < 5; x++)
			c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
		for (int x = 0; x < 5; x++)
			for (int y = 0; y < 25; y += 5)
				a[x + y] ^= c[(x + 4) % 5] ^ rotl(c[(x + 1) % 5], 1);
		for (int x = 0; x < 5; x++) /* rho and pi: (x, y) -> (y, 2x + 3y) */
			for (int y = 0; y < 5; y++)
				b[y + 5 * ((2 * x + 3 * y) % 5)] = rotl(a[x + 5 * y], rot[x + 5 * y]);
		for (int y = 0; y < 25; y += 5)
			for (int x = 0; x < 5; x++)
				a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
		a[0] ^= rc[round];
	}
}

/* rate 136 bytes (SHA3-256, SHAKE256); `domain` 0x06 for SHA3, 0x1f for SHAKE */
static void keccak_136(uint8_t *out, size_t out_len, const uint8_t *in, size_t in_len, uint8_t domain) {
	uint64_t a[25] = {0};
	uint8_t block[136];
	size_t done = 0;
	for (;;) {
		size_t n = in_len - done < 136 ? in_len - done : 136;
		memset(block, 0, sizeof block);
		memcpy(block, in + done, n);
		done += n;
		if (n < 136) {
			block[n] ^= domain;
			block[135] ^= 0x80;
		}
		for (int i = 0; i < 17; i++)
			for (int j = 0; j < 8; j++)
				a[i] ^= (uint64_t)block[8 * i + j] << (8 * j);
		keccak_f(a);
		if (n < 136)
			break;
	}
	for (size_t i = 0; i < out_len; i++) {
		if (i && i % 136 == 0)
			keccak_f(a);
		out[i] = (uint8_t)(a[(i % 136) / 8] >> (8 * (i % 8)));
	}
}

/* The bytes of sk that are public: copies of pk, of SHA3-256(pk) (ML-KEM's H(ek)) and of SHAKE256(pk, 64)
 * (ML-DSA's tr; Dilithium's is its first 32 bytes), and the prefix sk shares with pk in whole 16-byte blocks (ML-DSA's rho).  Read before sk is
 * tainted: searching a tainted key would itself be reported. */
struct ranges {
	size_t n, at[4], len[4];
};

static size_t find(const uint8_t *hay, size_t hay_len, const uint8_t *needle, size_t len) {
	for (size_t i = 0; len && i + len <= hay_len; i++)
		if (memcmp(hay + i, needle, len) == 0)
			return i;
	return SIZE_MAX;
}

static struct ranges public_parts(const uint8_t *sk, size_t sk_len, const uint8_t *pk, size_t pk_len) {
	struct ranges r = {0};
	uint8_t h256[32], tr[64];
	size_t prefix = 0;
	while (prefix < sk_len && prefix < pk_len && sk[prefix] == pk[prefix])
		prefix++;
	if ((prefix -= prefix % 16) > 0) {
		r.at[r.n] = 0;
		r.len[r.n++] = prefix;
	}
	keccak_136(h256, sizeof h256, pk, pk_len, 0x06);
	keccak_136(tr, sizeof tr, pk, pk_len, 0x1f);
	const uint8_t *copies[3] = {pk, h256, tr};
	size_t lens[3] = {pk_len, sizeof h256, sizeof tr};
	for (int i = 0; i < 3; i++) {
		size_t at = find(sk, sk_len, copies[i], lens[i]);
		if (at == SIZE_MAX && i == 2) /* Dilithium (round 3): a 32-byte tr, the start of the same output */
			at = find(sk, sk_len, copies[i], lens[i] = 32);
		if (at != SIZE_MAX && !(at == 0 && lens[i] <= prefix)) {
			r.at[r.n] = at;
			r.len[r.n++] = lens[i];
		}
	}
	return r;
}

/* Mark sk undefined except its public parts; returns how many bytes stay tainted (counted from the ranges,
 * which may not overlap: they are copies of different values). */
static size_t taint_secret(uint8_t *sk, size_t sk_len, const struct ranges *r) {
	size_t tainted = sk_len;
	VALGRIND_MAKE_MEM_UNDEFINED(sk, sk_len);
	for (size_t i = 0; i < r->n; i++) {
		VALGRIND_MAKE_MEM_DEFINED(sk + r->at[i], r->len[i]);
		tainted -= r->len[i];
	}
	return tainted;
}

static void ranges_json(const struct ranges *r, char *out, size_t out_len) {
	out[0] = '\0';
	for (size_t i = 0; i < r->n; i++) {
		size_t used = strlen(out);
		snprintf(out + used, out_len - used, "%s[%zu, %zu]", i ? ", " : "", r->at[i], r->len[i]);
	}
}

static int run_kem(const char *name, const char *version) {
	void *(*kem_new)(const char *) = (void *(*)(const char *))sym("OQS_KEM_new");
	int (*keypair)(const void *, uint8_t *, uint8_t *) = (int (*)(const void *, uint8_t *, uint8_t *))sym("OQS_KEM_keypair");
	int (*encaps)(const void *, uint8_t *, uint8_t *, const uint8_t *) =
	    (int (*)(const void *, uint8_t *, uint8_t *, const uint8_t *))sym("OQS_KEM_encaps");
	int (*decaps)(const void *, uint8_t *, const uint8_t *, const uint8_t *) =
	    (int (*)(const void *, uint8_t *, const uint8_t *, const uint8_t *))sym("OQS_KEM_decaps");
	struct kem_head *kem = kem_new(name);
	if (kem == NULL)
		fail(2, "not a KEM this liboqs has enabled");
	uint8_t *pk = zalloc(kem->length_public_key), *sk = zalloc(kem->length_secret_key);
	uint8_t *ct = zalloc(kem->length_ciphertext), *bad = zalloc(kem->length_ciphertext);
	uint8_t *ss = zalloc(kem->length_shared_secret), *ss_valid = zalloc(kem->length_shared_secret);
	uint8_t *ss_invalid = zalloc(kem->length_shared_secret);
	if (keypair(kem, pk, sk) != 0 || encaps(kem, ct, ss, pk) != 0)
		fail(3, "keypair or encapsulation failed");
	memcpy(bad, ct, kem->length_ciphertext);
	bad[0] ^= 1;
	phase_done("setup");
	char public_json[128];
	struct ranges pub = public_parts(sk, kem->length_secret_key, pk, kem->length_public_key);
	ranges_json(&pub, public_json, sizeof public_json);
	size_t tainted = taint_secret(sk, kem->length_secret_key, &pub);
	int rc_valid = decaps(kem, ss_valid, ct, sk); /* the status is an output too: the caller branches on it */
	VALGRIND_MAKE_MEM_DEFINED(ss_valid, kem->length_shared_secret);
	VALGRIND_MAKE_MEM_DEFINED(&rc_valid, sizeof rc_valid);
	phase_done("decaps-valid");
	taint_secret(sk, kem->length_secret_key, &pub);
	int rc_invalid = decaps(kem, ss_invalid, bad, sk);
	VALGRIND_MAKE_MEM_DEFINED(ss_invalid, kem->length_shared_secret);
	VALGRIND_MAKE_MEM_DEFINED(&rc_invalid, sizeof rc_invalid);
	phase_done("decaps-invalid");
	if (rc_valid != 0)
		fail(3, "decapsulation of the valid ciphertext failed");
	if (memcmp(ss_valid, ss, kem->length_shared_secret) != 0)
		fail(3, "decapsulation of the valid ciphertext did not give the encapsulated shared secret");
	/* implicit rejection returns success and another key; explicit rejection (HQC in liboqs 0.13) an error */
	if (rc_invalid == 0 && memcmp(ss_invalid, ss, kem->length_shared_secret) == 0)
		fail(3, "decapsulation of the altered ciphertext gave the encapsulated shared secret");
	printf("{\"ok\": true, \"liboqs_version\": \"%s\", \"method\": \"%s\", \"secret_bytes\": %zu, "
	       "\"tainted_bytes\": %zu, \"public_ranges\": [%s], \"rejection\": \"%s\", \"phases\": {%s}}\n",
	       version, kem->method_name, kem->length_secret_key, tainted, public_json,
	       rc_invalid == 0 ? "implicit" : "explicit", phase_json);
	((void (*)(void *))sym("OQS_KEM_free"))(kem);
	free(pk), free(sk), free(ct), free(bad), free(ss), free(ss_valid), free(ss_invalid);
	return 0;
}

static int run_sig(const char *name, const char *version) {
	void *(*sig_new)(const char *) = (void *(*)(const char *))sym("OQS_SIG_new");
	int (*keypair)(const void *, uint8_t *, uint8_t *) = (int (*)(const void *, uint8_t *, uint8_t *))sym("OQS_SIG_keypair");
	int (*sign)(const void *, uint8_t *, size_t *, const uint8_t *, size_t, const uint8_t *) =
	    (int (*)(const void *, uint8_t *, size_t *, const uint8_t *, size_t, const uint8_t *))sym("OQS_SIG_sign");
	int (*verify)(const void *, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *) =
	    (int (*)(const void *, const uint8_t *, size_t, const uint8_t *, size_t, const uint8_t *))sym("OQS_SIG_verify");
	struct sig_head *sig = sig_new(name);
	if (sig == NULL)
		fail(2, "not a signature this liboqs has enabled");
	static const uint8_t message[] = "pqlab taint check: a fixed public message";
	uint8_t *pk = zalloc(sig->length_public_key), *sk = zalloc(sig->length_secret_key);
	uint8_t *s = zalloc(sig->length_signature);
	size_t s_len = 0;
	if (keypair(sig, pk, sk) != 0)
		fail(3, "keypair failed");
	phase_done("setup");
	char public_json[128];
	struct ranges pub = public_parts(sk, sig->length_secret_key, pk, sig->length_public_key);
	ranges_json(&pub, public_json, sizeof public_json);
	size_t tainted = taint_secret(sk, sig->length_secret_key, &pub);
	int rc = sign(sig, s, &s_len, message, sizeof message, sk);
	VALGRIND_MAKE_MEM_DEFINED(&rc, sizeof rc);
	VALGRIND_MAKE_MEM_DEFINED(s, sig->length_signature);
	VALGRIND_MAKE_MEM_DEFINED(&s_len, sizeof s_len);
	phase_done("sign");
	if (rc != 0 || s_len > sig->length_signature || verify(sig, message, sizeof message, s, s_len, pk) != 0)
		fail(3, "the signature made with the tainted key does not verify");
	printf("{\"ok\": true, \"liboqs_version\": \"%s\", \"method\": \"%s\", \"secret_bytes\": %zu, "
	       "\"tainted_bytes\": %zu, \"public_ranges\": [%s], \"signature_bytes\": %zu, \"phases\": {%s}}\n",
	       version, sig->method_name, sig->length_secret_key, tainted, public_json, s_len, phase_json);
	((void (*)(void *))sym("OQS_SIG_free"))(sig);
	free(pk), free(sk), free(s);
	return 0;
}

static int run_function(const char *name, const char *nbytes) {
	char *end;
	unsigned long long n = strtoull(nbytes, &end, 10);
	if (*nbytes == '\0' || *end != '\0' || n == 0 || n > (1u << 24))
		fail(2, "nbytes is a whole number from 1 to 16777216");
	void (*f)(uint8_t *, const uint8_t *, size_t) = (void (*)(uint8_t *, const uint8_t *, size_t))dlsym(lib, name);
	if (f == NULL)
		fail(2, "the library does not export this symbol");
	uint8_t *secret = zalloc((size_t)n), *out = zalloc((size_t)n);
	for (size_t i = 0; i < n; i++)
		secret[i] = (uint8_t)i;
	phase_done("setup");
	VALGRIND_MAKE_MEM_UNDEFINED(secret, (size_t)n);
	f(out, secret, (size_t)n);
	VALGRIND_MAKE_MEM_DEFINED(out, (size_t)n);
	phase_done("function");
	printf("{\"ok\": true, \"secret_bytes\": %llu, \"tainted_bytes\": %llu, \"public_ranges\": [], "
	       "\"phases\": {%s}}\n", n, n, phase_json);
	free(secret), free(out);
	return 0;
}

/* the positive control: both must be reported */
static const uint8_t table[256] = {1, 2, 3, 4, 5, 6, 7, 8};
static volatile unsigned odd, even, looked_up;

__attribute__((noinline)) void pqlab_control_branch(const uint8_t *secret) {
	if (secret[0] & 1) /* volatile stores on one side only: the compiler must branch */
		odd++;
	else
		even++;
}

__attribute__((noinline)) void pqlab_control_index(const uint8_t *secret) {
	looked_up = table[secret[0]];
}

/* the negative control: a constant-time select, which must not be reported */
__attribute__((noinline)) void pqlab_control_select(const uint8_t *secret, uint8_t *out) {
	uint8_t mask = (uint8_t)(0 - (secret[0] & 1));
	out[0] = (uint8_t)((0x5a & mask) | (0xa5 & (uint8_t)~mask));
}

static int run_control(const char *which) {
	uint8_t secret[32], out[1] = {0};
	for (int i = 0; i < 32; i++)
		secret[i] = (uint8_t)(7 * i + 3);
	phase_done("setup");
	VALGRIND_MAKE_MEM_UNDEFINED(secret, sizeof secret);
	if (strcmp(which, "leaky") == 0) {
		pqlab_control_branch(secret);
		pqlab_control_index(secret);
	} else if (strcmp(which, "clean") == 0) {
		pqlab_control_select(secret, out);
		VALGRIND_MAKE_MEM_DEFINED(out, sizeof out);
	} else {
		fail(2, "the control is leaky or clean");
	}
	phase_done(which);
	printf("{\"ok\": true, \"secret_bytes\": 32, \"tainted_bytes\": 32, \"public_ranges\": [], \"phases\": {%s}}\n",
	       phase_json);
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	int function = argc == 5 && strcmp(argv[2], "function") == 0;
	if (argc != 4 && !function)
		fail(2, "usage: taint_harness <libpath>|- kem|sig|control <algorithm>, or <libpath> function <symbol> "
		        "<nbytes>");
	if (strcmp(argv[2], "control") == 0)
		return run_control(argv[3]);
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		printf("{\"error\": \"cannot load %s\", \"status\": 4}\n", function ? "the library" : "liboqs");
		return 4;
	}
	if (function)
		return run_function(argv[3], argv[4]);
	((void (*)(void))sym("OQS_init"))();
	const char *version = ((const char *(*)(void))sym("OQS_version"))();
	if (strcmp(argv[2], "kem") == 0)
		return run_kem(argv[3], version);
	if (strcmp(argv[2], "sig") == 0)
		return run_sig(argv[3], version);
	fail(2, "the kind is kem, sig, control or function");
	return 2;
}
