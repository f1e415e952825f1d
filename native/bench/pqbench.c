/*
 * pqbench: time liboqs signature and KEM operations natively, with no
 * interpreter in the way, so pqlab can state what its Python harness adds.
 *
 *   pqbench time --impl liboqs --alg ML-DSA-44 --ops keygen,sign,verify --message-bytes 100 \
 *           --budget 1.0 --min-samples 5 --max-samples 1000 --counter auto
 *   pqbench list
 *
 * It speaks pqlab's program protocol, version 2 (native/PROTOCOL.md): `list` describes the program,
 * the liboqs it loaded and every algorithm that build enables; `time` times one algorithm.
 *
 * Each sample times ONE call: CLOCK_MONOTONIC (nanoseconds) and a cycle
 * counter with pqlab's labels (pqlab/measure/cycles.py): "core-cycles" = the
 * perf_event_open CPU-cycle counter of this thread, user space only
 * (exclude_kernel, exclude_hv); "tsc" = reference cycles read as pqlab's TSC
 * helper reads them (pqlab/measure/tsc.h: rdtsc on x86-64, cntvct_el0 on aarch64);
 * "none".  --counter auto takes the first that works, in that order, and
 * "cycles_error" says why the better ones did not; --counter perf|tsc|none
 * forces one, and a forced counter that does not work is a usage error.
 * Every output is checked outside the timed region (signatures verify,
 * tampered signatures and messages are rejected, KEM secrets agree); a failed
 * check marks the operation failed.
 *
 * Output: one JSON object on stdout.  Exit status: 0 all operations verified,
 * 1 some operation failed its check (the JSON says which), 2 bad request
 * (unknown command, option or algorithm, a malformed value, an unavailable
 * forced counter): stdout is {"error": "<one line>"}, stderr says it too.
 *
 * The binary is linked against one liboqs build (see Makefile: rpath, not
 * LD_LIBRARY_PATH) and reports the library it actually loaded (dladdr).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <oqs/oqs.h>

#include "tsc.h"

/* The protocol version (native/PROTOCOL.md) and this program's name in pqlab's registry. */
#define PQBENCH_PROTOCOL 2
#define PQBENCH_PROGRAM "pqbench"

/* The compiler that built this binary: the list's "toolchain". */
#if defined(__clang__)
#define PQBENCH_TOOLCHAIN "clang " __clang_version__
#elif defined(__GNUC__)
#define PQBENCH_TOOLCHAIN "gcc " __VERSION__
#elif defined(__VERSION__)
#define PQBENCH_TOOLCHAIN __VERSION__
#else
#define PQBENCH_TOOLCHAIN ""
#endif

#ifndef PQBENCH_BUILD
#define PQBENCH_BUILD ""
#endif
#ifndef PQBENCH_LIBOQS
#define PQBENCH_LIBOQS ""
#endif

/* ------------------------------------------------------------------ util */

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "pqbench: out of memory (%zu bytes)\n", n);
		exit(4); /* a crash in the protocol's terms (2 is a bad request) */
	}
	return p;
}

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
	uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
	return (x > y) - (x < y);
}

static uint64_t median_u64(uint64_t *v, size_t n) {
	if (n == 0) {
		return 0;
	}
	qsort(v, n, sizeof *v, cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void json_str(FILE *f, const char *s) {
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *) (s ? s : ""); *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20) {
				fprintf(f, "\\u%04x", *p);
			} else {
				fputc(*p, f);
			}
		}
	}
	fputc('"', f);
}

/* ------------------------------------------------------------ cycle counters */

typedef struct {
	uint64_t value, enabled, running;
} counter_read;

typedef enum { COUNTER_NONE, COUNTER_PERF, COUNTER_TSC } counter_kind;
static const char *const COUNTER_LABEL[] = {"none", "core-cycles", "tsc"};

static counter_kind counter = COUNTER_NONE;
static int cycles_fd = -1;
static char cycles_error[512] = "";

/* Opens the perf_event core-cycle counter; false (and the reason in why) if it does not count. */
static bool perf_open(char *why, size_t n) {
	struct perf_event_attr pe;
	memset(&pe, 0, sizeof pe);
	pe.type = PERF_TYPE_HARDWARE;
	pe.size = sizeof pe;
	pe.config = PERF_COUNT_HW_CPU_CYCLES;
	pe.exclude_kernel = 1;
	pe.exclude_hv = 1;
	pe.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	long fd = syscall(SYS_perf_event_open, &pe, 0 /* this thread */, -1 /* any cpu */, -1, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(why, n, "perf_event_open: %s (errno %d)%s", strerror(e), e,
		         e == ENOENT ? " (no PMU: typical of virtual machines)" : "");
		return false;
	}
	/* The counter must actually advance (some virtual PMUs accept the event and count nothing). */
	counter_read a, b;
	if (read((int) fd, &a, sizeof a) != (ssize_t) sizeof a) {
		snprintf(why, n, "read() on the perf_event fd failed: %s", strerror(errno));
		close((int) fd);
		return false;
	}
	volatile uint64_t sink = 0;
	for (uint64_t i = 0; i < 200000; i++) {
		sink += i;
	}
	(void) sink;
	if (read((int) fd, &b, sizeof b) != (ssize_t) sizeof b || b.value <= a.value) {
		snprintf(why, n, "perf_event_open opened a cycle counter that does not count (the virtual PMU counts nothing)");
		close((int) fd);
		return false;
	}
	cycles_fd = (int) fd;
	return true;
}

static bool tsc_works(char *why, size_t n) {
	uint64_t a = pqlab_tsc_now();
	struct timespec pause = {0, 1000000};
	nanosleep(&pause, NULL);
	if (pqlab_tsc_now() <= a) {
		snprintf(why, n, "%s does not advance here", PQLAB_TSC_NAME);
		return false;
	}
	return true;
}

/* Chooses the counter: "auto" (core cycles, else tsc, else none) or a forced one.
 * False if a forced counter does not work (cycles_error says why). */
static bool counter_open(const char *mode) {
	char why_perf[256] = "", why_tsc[256] = "";
	bool any = strcmp(mode, "auto") == 0;
	if (strcmp(mode, "none") == 0) {
		snprintf(cycles_error, sizeof cycles_error, "--counter none");
		return true;
	}
	if ((any || strcmp(mode, "perf") == 0) && perf_open(why_perf, sizeof why_perf)) {
		counter = COUNTER_PERF;
		return true;
	}
	if (!any && strcmp(mode, "perf") == 0) {
		snprintf(cycles_error, sizeof cycles_error, "--counter perf: core cycles are unavailable here: %s", why_perf);
		return false;
	}
	if (tsc_works(why_tsc, sizeof why_tsc)) {
		counter = COUNTER_TSC;
		snprintf(cycles_error, sizeof cycles_error, "%s%s", any ? "no core cycles: " : "", any ? why_perf : "");
		return true;
	}
	if (!any) {
		snprintf(cycles_error, sizeof cycles_error, "--counter tsc: %s", why_tsc);
		return false;
	}
	snprintf(cycles_error, sizeof cycles_error, "no core cycles: %s; no TSC reference cycles: %s", why_perf, why_tsc);
	return true;
}

/* The counter now; for perf also the times it was enabled and running (a
 * multiplexed counter runs part of the time).  A failed perf read gives zeros,
 * which the caller treats as a missing count. */
static inline void counter_now(counter_read *r) {
	if (counter == COUNTER_TSC) {
		r->value = pqlab_tsc_now();
		r->enabled = r->running = 1;
	} else if (counter == COUNTER_PERF && read(cycles_fd, r, sizeof *r) != (ssize_t) sizeof *r) {
		r->value = r->enabled = r->running = 0;
	}
}

/* Counts between two reads, or -1 where the counter did not run for the whole interval. */
static inline int64_t counter_delta(const counter_read *a, const counter_read *b) {
	if (counter == COUNTER_TSC) {
		return (int64_t) (b->value - a->value);
	}
	if (counter == COUNTER_PERF && b->running - a->running == b->enabled - a->enabled && b->running > a->running) {
		return (int64_t) (b->value - a->value);
	}
	return -1;
}

/* ------------------------------------------------------- sample recording */

typedef struct {
	uint64_t *ns;
	int64_t *cycles; /* -1: counter not running for the whole call */
	size_t n, cap;
} series;

static void series_init(series *s, size_t cap) {
	s->ns = xmalloc(cap * sizeof *s->ns);
	s->cycles = xmalloc(cap * sizeof *s->cycles);
	s->n = 0;
	s->cap = cap;
}

static void series_free(series *s) {
	free(s->ns);
	free(s->cycles);
}

/* ----------------------------------------------------------- the contexts */

typedef struct {
	size_t pool;       /* pre-made inputs for verify / decaps, cycled through */
	size_t mlen;       /* message bytes */
	bool fixed_message;
} options;

typedef struct {
	OQS_SIG *sig;
	OQS_KEM *kem;
	const options *opt;
	/* the key pair used by sign / verify / encaps / decaps */
	uint8_t *pk, *sk;
	/* keygen output (kept apart from pk, sk) */
	uint8_t *kpk, *ksk;
	/* current message and signature */
	uint8_t *msg, *sigbuf, *scratch_sig, *scratch_msg;
	size_t siglen, sig_min, sig_max;
	/* verify pool */
	uint8_t **pool_msg, **pool_sig;
	size_t *pool_siglen;
	/* KEM buffers */
	uint8_t *ct, *ss, *ss2, *scratch_ct;
	uint8_t **pool_ct, **pool_ss;
	size_t idx;
	OQS_STATUS last_status;
	char err[256];
} ctx;

typedef struct {
	const char *name;
	void (*prepare)(ctx *c, size_t i);
	OQS_STATUS (*call)(ctx *c);
	bool (*check)(ctx *c); /* false: fills c->err */
	bool uses_message;
} op_spec;

/* Signs msg with sk and checks: verify accepts; a flipped signature byte and
 * a flipped message byte are rejected. */
static bool sig_roundtrip_check(ctx *c, const uint8_t *msg, size_t mlen, const uint8_t *sig, size_t siglen,
                                const uint8_t *pk) {
	OQS_SIG *s = c->sig;
	if (siglen == 0 || siglen > s->length_signature) {
		snprintf(c->err, sizeof c->err, "signature length %zu outside 1..%zu", siglen, s->length_signature);
		return false;
	}
	if (OQS_SIG_verify(s, msg, mlen, sig, siglen, pk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "verify rejected a fresh signature");
		return false;
	}
	memcpy(c->scratch_sig, sig, siglen);
	c->scratch_sig[siglen / 2] ^= 0x01;
	if (OQS_SIG_verify(s, msg, mlen, c->scratch_sig, siglen, pk) == OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "verify accepted a signature with a flipped byte");
		return false;
	}
	if (mlen > 0) {
		memcpy(c->scratch_msg, msg, mlen);
		c->scratch_msg[mlen / 2] ^= 0x01;
		if (OQS_SIG_verify(s, c->scratch_msg, mlen, sig, siglen, pk) == OQS_SUCCESS) {
			snprintf(c->err, sizeof c->err, "verify accepted a signature on a tampered message");
			return false;
		}
	}
	return true;
}

/* SIG keygen: the new key pair must sign and verify. */
static void sig_keygen_prepare(ctx *c, size_t i) {
	(void) c;
	(void) i;
}
static OQS_STATUS sig_keygen_call(ctx *c) {
	return OQS_SIG_keypair(c->sig, c->kpk, c->ksk);
}
static bool sig_keygen_check(ctx *c) {
	size_t len = 0;
	if (OQS_SIG_sign(c->sig, c->sigbuf, &len, c->msg, c->opt->mlen, c->ksk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "signing with a fresh key pair failed");
		return false;
	}
	return sig_roundtrip_check(c, c->msg, c->opt->mlen, c->sigbuf, len, c->kpk);
}

/* SIG sign: a fresh random message per sample (unless --fixed-message). */
static void sig_sign_prepare(ctx *c, size_t i) {
	(void) i;
	if (!c->opt->fixed_message) {
		OQS_randombytes(c->msg, c->opt->mlen);
	}
	c->siglen = 0;
}
static OQS_STATUS sig_sign_call(ctx *c) {
	return OQS_SIG_sign(c->sig, c->sigbuf, &c->siglen, c->msg, c->opt->mlen, c->sk);
}
static bool sig_sign_check(ctx *c) {
	if (c->siglen < c->sig_min) {
		c->sig_min = c->siglen;
	}
	if (c->siglen > c->sig_max) {
		c->sig_max = c->siglen;
	}
	return sig_roundtrip_check(c, c->msg, c->opt->mlen, c->sigbuf, c->siglen, c->pk);
}

/* SIG verify: cycles through a pool of pre-made, pre-checked signatures. */
static void sig_verify_prepare(ctx *c, size_t i) {
	c->idx = i % c->opt->pool;
}
static OQS_STATUS sig_verify_call(ctx *c) {
	return OQS_SIG_verify(c->sig, c->pool_msg[c->idx], c->opt->mlen, c->pool_sig[c->idx], c->pool_siglen[c->idx],
	                      c->pk);
}
static bool sig_verify_check(ctx *c) {
	(void) c;
	return true; /* the status of the timed call itself is the check (see run_op) */
}

/* KEM keygen: the new key pair must encapsulate and decapsulate. */
static void kem_keygen_prepare(ctx *c, size_t i) {
	(void) c;
	(void) i;
}
static OQS_STATUS kem_keygen_call(ctx *c) {
	return OQS_KEM_keypair(c->kem, c->kpk, c->ksk);
}
static bool kem_keygen_check(ctx *c) {
	OQS_KEM *k = c->kem;
	if (OQS_KEM_encaps(k, c->ct, c->ss, c->kpk) != OQS_SUCCESS ||
	        OQS_KEM_decaps(k, c->ss2, c->ct, c->ksk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "encaps/decaps with a fresh key pair failed");
		return false;
	}
	if (memcmp(c->ss, c->ss2, k->length_shared_secret) != 0) {
		snprintf(c->err, sizeof c->err, "shared secrets differ with a fresh key pair");
		return false;
	}
	return true;
}

/* KEM encaps: every ciphertext is decapsulated and the secrets compared. */
static void kem_encaps_prepare(ctx *c, size_t i) {
	(void) c;
	(void) i;
}
static OQS_STATUS kem_encaps_call(ctx *c) {
	return OQS_KEM_encaps(c->kem, c->ct, c->ss, c->pk);
}
static bool kem_encaps_check(ctx *c) {
	OQS_KEM *k = c->kem;
	if (OQS_KEM_decaps(k, c->ss2, c->ct, c->sk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "decaps of a fresh ciphertext failed");
		return false;
	}
	if (memcmp(c->ss, c->ss2, k->length_shared_secret) != 0) {
		snprintf(c->err, sizeof c->err, "encaps and decaps shared secrets differ");
		return false;
	}
	return true;
}

/* KEM decaps: cycles through a pool of pre-made ciphertexts with known secrets. */
static void kem_decaps_prepare(ctx *c, size_t i) {
	c->idx = i % c->opt->pool;
	memset(c->ss2, 0, c->kem->length_shared_secret);
}
static OQS_STATUS kem_decaps_call(ctx *c) {
	return OQS_KEM_decaps(c->kem, c->ss2, c->pool_ct[c->idx], c->sk);
}
static bool kem_decaps_check(ctx *c) {
	if (memcmp(c->ss2, c->pool_ss[c->idx], c->kem->length_shared_secret) != 0) {
		snprintf(c->err, sizeof c->err, "decaps shared secret differs from the encaps one");
		return false;
	}
	return true;
}

static const op_spec SIG_OPS[] = {
	{"keygen", sig_keygen_prepare, sig_keygen_call, sig_keygen_check, false},
	{"sign", sig_sign_prepare, sig_sign_call, sig_sign_check, true},
	{"verify", sig_verify_prepare, sig_verify_call, sig_verify_check, true},
};
static const op_spec KEM_OPS[] = {
	{"keygen", kem_keygen_prepare, kem_keygen_call, kem_keygen_check, false},
	{"encaps", kem_encaps_prepare, kem_encaps_call, kem_encaps_check, false},
	{"decaps", kem_decaps_prepare, kem_decaps_call, kem_decaps_check, false},
};

/* Pool set-up (untimed): verify pool signatures and decaps pool ciphertexts,
 * each checked, including the tampered cases. */
static bool setup_sig(ctx *c) {
	OQS_SIG *s = c->sig;
	const options *o = c->opt;
	if (OQS_SIG_keypair(s, c->pk, c->sk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "set-up key generation failed");
		return false;
	}
	OQS_randombytes(c->msg, o->mlen); /* the message of --fixed-message */
	for (size_t i = 0; i < o->pool; i++) {
		OQS_randombytes(c->pool_msg[i], o->mlen);
		if (OQS_SIG_sign(s, c->pool_sig[i], &c->pool_siglen[i], c->pool_msg[i], o->mlen, c->sk) != OQS_SUCCESS) {
			snprintf(c->err, sizeof c->err, "set-up signing failed");
			return false;
		}
		if (!sig_roundtrip_check(c, c->pool_msg[i], o->mlen, c->pool_sig[i], c->pool_siglen[i], c->pk)) {
			return false;
		}
	}
	return true;
}

static bool setup_kem(ctx *c) {
	OQS_KEM *k = c->kem;
	if (OQS_KEM_keypair(k, c->pk, c->sk) != OQS_SUCCESS) {
		snprintf(c->err, sizeof c->err, "set-up key generation failed");
		return false;
	}
	for (size_t i = 0; i < c->opt->pool; i++) {
		if (OQS_KEM_encaps(k, c->pool_ct[i], c->pool_ss[i], c->pk) != OQS_SUCCESS ||
		        OQS_KEM_decaps(k, c->ss2, c->pool_ct[i], c->sk) != OQS_SUCCESS) {
			snprintf(c->err, sizeof c->err, "set-up encaps/decaps failed");
			return false;
		}
		if (memcmp(c->ss2, c->pool_ss[i], k->length_shared_secret) != 0) {
			snprintf(c->err, sizeof c->err, "set-up shared secrets differ");
			return false;
		}
		/* A tampered ciphertext must not yield the same secret (implicit
		 * rejection gives a pseudo-random one, or decaps reports an error). */
		memcpy(c->scratch_ct, c->pool_ct[i], k->length_ciphertext);
		c->scratch_ct[k->length_ciphertext / 2] ^= 0x01;
		if (OQS_KEM_decaps(k, c->ss2, c->scratch_ct, c->sk) == OQS_SUCCESS &&
		        memcmp(c->ss2, c->pool_ss[i], k->length_shared_secret) == 0) {
			snprintf(c->err, sizeof c->err, "decaps of a tampered ciphertext gave the original secret");
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------- the sampler */

typedef struct {
	double budget_s;
	size_t min_samples, max_samples, warmup, cold;
} sampling;

typedef struct {
	const op_spec *spec;
	series cold, warm, main;
	bool verified;
	size_t checks, cycles_dropped;
	double elapsed_s;
	const char *stopped_by;
	char error[512];
	size_t sig_min, sig_max;
} op_result;

/* One timed call.  Order: counter read, clock, CALL, clock, counter read, so
 * the nanoseconds bracket only the call and two vDSO clock reads, and the
 * cycles add only the counter reads' own tail/head and the clock reads (see
 * "timer_overhead_*" for the size of both). */
static OQS_STATUS timed_call(const op_spec *spec, ctx *c, series *s) {
	counter_read a = {0, 0, 0}, b = {0, 0, 0};
	counter_now(&a);
	uint64_t t0 = now_ns();
	OQS_STATUS rc = spec->call(c);
	uint64_t t1 = now_ns();
	counter_now(&b);
	if (s->n < s->cap) {
		s->ns[s->n] = t1 - t0;
		s->cycles[s->n] = counter_delta(&a, &b);
		s->n++;
	}
	return rc;
}

static void run_op(const op_spec *spec, ctx *c, const sampling *sp, op_result *r) {
	memset(r, 0, sizeof *r);
	r->spec = spec;
	r->verified = true;
	r->stopped_by = "budget";
	series_init(&r->cold, sp->cold ? sp->cold : 1);
	series_init(&r->warm, sp->warmup ? sp->warmup : 1);
	series_init(&r->main, sp->max_samples);
	c->sig_min = SIZE_MAX;
	c->sig_max = 0;
	c->err[0] = '\0';

	/* --cold: the first calls, timed one by one and recorded apart (a cold cache's cost); then the
	 * warm-up: same calls and checks, recorded apart. */
	for (size_t phase = 0; phase < 2; phase++) {
		const char *what = phase ? "warm-up" : "cold call";
		size_t n = phase ? sp->warmup : sp->cold;
		for (size_t i = 0; i < n && r->verified; i++) {
			spec->prepare(c, i);
			OQS_STATUS rc = timed_call(spec, c, phase ? &r->warm : &r->cold);
			if (rc != OQS_SUCCESS) {
				snprintf(r->error, sizeof r->error, "%s: %s returned an error status", what, spec->name);
				r->verified = false;
			} else if (!spec->check(c)) {
				snprintf(r->error, sizeof r->error, "%s: %s", what, c->err);
				r->verified = false;
			} else {
				r->checks++;
			}
		}
	}

	uint64_t start = now_ns();
	uint64_t budget_ns = (uint64_t) (sp->budget_s * 1e9);
	for (size_t i = 0; r->verified; i++) {
		if (i >= sp->max_samples) {
			r->stopped_by = "max-samples";
			break;
		}
		if (i >= sp->min_samples && now_ns() - start >= budget_ns) {
			break;
		}
		spec->prepare(c, i);
		OQS_STATUS rc = timed_call(spec, c, &r->main);
		if (rc != OQS_SUCCESS) {
			snprintf(r->error, sizeof r->error, "%s returned an error status (sample %zu)%s", spec->name, i,
			         strcmp(spec->name, "verify") == 0 ? ": a valid signature was rejected" : "");
			r->verified = false;
		} else if (!spec->check(c)) {
			snprintf(r->error, sizeof r->error, "sample %zu: %s", i, c->err);
			r->verified = false;
		} else {
			r->checks++;
		}
	}
	if (!r->verified) {
		r->stopped_by = "failure";
	}
	r->elapsed_s = (double) (now_ns() - start) / 1e9;
	for (size_t i = 0; i < r->main.n; i++) {
		if (r->main.cycles[i] < 0) {
			r->cycles_dropped++;
		}
	}
	r->sig_min = c->sig_min == SIZE_MAX ? 0 : c->sig_min;
	r->sig_max = c->sig_max;
}

/* Median cost of an empty bracket (counter read, clock, clock, counter read). */
static void timer_overhead(uint64_t *ns_med, int64_t *cyc_med) {
	enum { N = 1001 };
	uint64_t ns[N], cyc[N];
	size_t nc = 0;
	for (int i = 0; i < N; i++) {
		counter_read a = {0, 0, 0}, b = {0, 0, 0};
		counter_now(&a);
		uint64_t t0 = now_ns();
		uint64_t t1 = now_ns();
		counter_now(&b);
		int64_t d = counter_delta(&a, &b);
		if (d >= 0) {
			cyc[nc++] = (uint64_t) d;
		}
		ns[i] = t1 - t0;
	}
	*ns_med = median_u64(ns, N);
	*cyc_med = nc ? (int64_t) median_u64(cyc, nc) : -1;
}

/* ---------------------------------------------------------------- output */

static const char *liboqs_path(void) {
	static char path[4096];
	Dl_info info;
	/* ISO C has no function-to-object pointer cast; POSIX dladdr needs one. */
	union {
		const char *(*fn)(void);
		void *obj;
	} sym = {.fn = OQS_version};
	if (dladdr(sym.obj, &info) && info.dli_fname) {
		if (!realpath(info.dli_fname, path)) {
			snprintf(path, sizeof path, "%s", info.dli_fname);
		}
		return path;
	}
	return "";
}

/* The fields every document starts with: the protocol, the program, the library it loaded. */
static void print_head(FILE *f) {
	fprintf(f, "\"protocol\": %d, \"program\": \"%s\", ", PQBENCH_PROTOCOL, PQBENCH_PROGRAM);
}

static void print_build_info(FILE *f) {
	fputs("\"liboqs_version\": ", f);
	json_str(f, OQS_version());
	fputs(", \"liboqs_version_compiled\": ", f);
	json_str(f, OQS_VERSION_TEXT);
	fputs(", \"liboqs_path\": ", f);
	json_str(f, liboqs_path());
	fputs(", \"liboqs_prefix\": ", f);
	json_str(f, PQBENCH_LIBOQS);
	fputs(", \"build\": ", f);
	json_str(f, PQBENCH_BUILD);
#ifdef OQS_DIST_BUILD
	fputs(", \"oqs_dist_build\": true", f);
#else
	fputs(", \"oqs_dist_build\": false", f);
#endif
	fputs(", \"oqs_opt_target\": ", f);
#ifdef OQS_OPT_TARGET
	json_str(f, OQS_OPT_TARGET);
#else
	json_str(f, "");
#endif
	fputs(", \"oqs_compile_build_target\": ", f);
#ifdef OQS_COMPILE_BUILD_TARGET
	json_str(f, OQS_COMPILE_BUILD_TARGET);
#else
	json_str(f, "");
#endif
	/* What the run-time dispatch of a distributable build can use here. */
	static const struct {
		OQS_CPU_EXT ext;
		const char *name;
	} exts[] = {
		{OQS_CPU_EXT_ADX, "adx"}, {OQS_CPU_EXT_AES, "aes"}, {OQS_CPU_EXT_AVX, "avx"},
		{OQS_CPU_EXT_AVX2, "avx2"}, {OQS_CPU_EXT_AVX512, "avx512"}, {OQS_CPU_EXT_BMI1, "bmi1"},
		{OQS_CPU_EXT_BMI2, "bmi2"}, {OQS_CPU_EXT_PCLMULQDQ, "pclmulqdq"},
		{OQS_CPU_EXT_VPCLMULQDQ, "vpclmulqdq"}, {OQS_CPU_EXT_POPCNT, "popcnt"}, {OQS_CPU_EXT_SSE, "sse"},
		{OQS_CPU_EXT_SSE2, "sse2"}, {OQS_CPU_EXT_SSE3, "sse3"}, {OQS_CPU_EXT_ARM_AES, "arm_aes"},
		{OQS_CPU_EXT_ARM_SHA2, "arm_sha2"}, {OQS_CPU_EXT_ARM_SHA3, "arm_sha3"},
		{OQS_CPU_EXT_ARM_NEON, "arm_neon"},
	};
	fputs(", \"cpu_extensions\": [", f);
	bool first = true;
	for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
		if (OQS_CPU_has_extension(exts[i].ext)) {
			fprintf(f, "%s\"%s\"", first ? "" : ", ", exts[i].name);
			first = false;
		}
	}
	fputs("]", f);
}

static void print_algorithms(FILE *f, const char *kind, int count, const char *(*identifier)(size_t),
                             int (*enabled)(const char *), bool *first) {
	for (int i = 0; i < count; i++) {
		const char *id = identifier((size_t) i);
		if (enabled(id)) {
			fputs(*first ? "" : ", ", f);
			fputs("{\"implementation\": \"liboqs\", \"algorithm\": ", f);
			json_str(f, id);
			fprintf(f, ", \"kind\": \"%s\", \"seeded\": []}", kind);
			*first = false;
		}
	}
}

/* `list`: the program, the liboqs it loaded and every algorithm that build enables. */
static void print_list(void) {
	FILE *f = stdout;
	fputs("{", f);
	print_head(f);
	fputs("\"language\": \"C\", \"toolchain\": ", f);
	json_str(f, PQBENCH_TOOLCHAIN);
	fputs(", \"commands\": [\"time\"], \"implementations\": [{\"implementation\": \"liboqs\", \"version\": ", f);
	json_str(f, OQS_version());
	fputs(", \"package\": \"liboqs\", \"provenance\": \"\", \"options\": ", f);
	json_str(f, PQBENCH_BUILD);
	fputs("}], \"algorithms\": [", f);
	bool first = true;
	print_algorithms(f, "sig", OQS_SIG_alg_count(), OQS_SIG_alg_identifier, OQS_SIG_alg_is_enabled, &first);
	print_algorithms(f, "kem", OQS_KEM_alg_count(), OQS_KEM_alg_identifier, OQS_KEM_alg_is_enabled, &first);
	fputs("], ", f);
	print_build_info(f);
	fputs("}\n", f);
}

/* A bad request: {"error": ...} on stdout, the same line on stderr; exit status 2. */
static int bad_request(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_request(const char *fmt, ...) {
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++) {
		if (*p == '\n') {
			*p = ' '; /* one line */
		}
	}
	fputs("{\"error\": ", stdout);
	json_str(stdout, msg);
	fputs("}\n", stdout);
	fflush(stdout);
	fprintf(stderr, "pqbench: %s\n", msg);
	return 2;
}

static void print_series(FILE *f, const char *key_ns, const char *key_cyc, const series *s) {
	fprintf(f, "\"%s\": [", key_ns);
	for (size_t i = 0; i < s->n; i++) {
		fprintf(f, "%s%" PRIu64, i ? ", " : "", s->ns[i]);
	}
	fprintf(f, "], \"%s\": [", key_cyc);
	if (counter != COUNTER_NONE) {
		for (size_t i = 0; i < s->n; i++) {
			if (s->cycles[i] < 0) {
				fprintf(f, "%snull", i ? ", " : "");
			} else {
				fprintf(f, "%s%" PRId64, i ? ", " : "", s->cycles[i]);
			}
		}
	}
	fputs("]", f);
}

/* ------------------------------------------------------------------ main */

static void usage(FILE *f) {
	fputs("usage: pqbench time [--impl liboqs] --alg NAME [--ops keygen,sign,verify | keygen,encaps,decaps]\n"
	      "               [--message-bytes N] [--budget SECONDS] [--min-samples N]\n"
	      "               [--max-samples N] [--warmup N] [--cold N] [--sample-ns NS] [--pool N]\n"
	      "               [--fixed-message] [--cpu N] [--counter auto|perf|tsc|none]\n"
	      "       pqbench list\n"
	      "Speaks pqlab's program protocol 2 (native/PROTOCOL.md).  `time` times each liboqs call\n"
	      "(one call per sample, so loops is 1 and --sample-ns is accepted and unused) in ns and cycles\n"
	      "(--counter: auto = core cycles via perf_event_open, else TSC reference cycles, else none) and\n"
	      "prints one JSON object.  --budget is wall-clock seconds per operation (checks included);\n"
	      "--min-samples are always taken; --cold N times the first N calls apart (cold_ns).  Sign uses a\n"
	      "fresh random message per sample, verify and decaps cycle through --pool pre-made inputs;\n"
	      "--fixed-message uses one message / input throughout.  --cpu pins the process.\n"
	      "`list` names the liboqs this binary loaded and every algorithm that build enables.\n",
	      f);
}

static bool parse_size(const char *s, size_t *out) {
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || *s == '-') {
		return false;
	}
	*out = (size_t) v;
	return true;
}

static const struct option LONGOPTS[] = {
	{"impl", required_argument, NULL, 'i'},
	{"alg", required_argument, NULL, 'a'},
	{"ops", required_argument, NULL, 'o'},
	{"message-bytes", required_argument, NULL, 'm'},
	{"budget", required_argument, NULL, 'b'},
	{"min-samples", required_argument, NULL, 'n'},
	{"max-samples", required_argument, NULL, 'N'},
	{"warmup", required_argument, NULL, 'w'},
	{"cold", required_argument, NULL, 'k'},
	{"sample-ns", required_argument, NULL, 's'},
	{"pool", required_argument, NULL, 'p'},
	{"fixed-message", no_argument, NULL, 'F'},
	{"cpu", required_argument, NULL, 'c'},
	{"counter", required_argument, NULL, 'C'},
	{NULL, 0, NULL, 0},
};

static const char *option_name(int ch) {
	for (const struct option *o = LONGOPTS; o->name; o++) {
		if (o->val == ch) {
			return o->name;
		}
	}
	return "?";
}

int main(int argc, char **argv) {
	const char *alg = NULL;
	char *ops_arg = NULL;
	options opt = {.pool = 16, .mlen = 100, .fixed_message = false};
	sampling sp = {.budget_s = 1.0, .min_samples = 5, .max_samples = 1000, .warmup = 3, .cold = 0};
	const char *counter_mode = "auto";
	long cpu = -1;

	if (argc < 2) {
		return bad_request("no command: pqbench answers `list` and `time --impl liboqs --alg NAME ...` "
		                   "(native/PROTOCOL.md)");
	}
	const char *command = argv[1];
	if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0 || strcmp(command, "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(command, "list") == 0) {
		if (argc > 2) {
			return bad_request("`list` takes no options, got '%s'", argv[2]);
		}
		OQS_init();
		print_list();
		OQS_destroy();
		return 0;
	}
	if (strcmp(command, "time") != 0) {
		return bad_request("unknown command '%s': pqbench answers list, time", command);
	}

	/* The options of `time`; argv[1] ("time") stands in for the program name. */
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc - 1, argv + 1, "+:", LONGOPTS, NULL)) != -1) {
		bool ok = true;
		size_t v = 0;
		char *end;
		switch (ch) {
		case 'i':
			ok = strcmp(optarg, "liboqs") == 0;
			if (!ok) {
				return bad_request("unknown implementation '%s': pqbench times liboqs only", optarg);
			}
			break;
		case 'a':
			alg = optarg;
			break;
		case 'o':
			ops_arg = optarg;
			break;
		case 'm':
			ok = parse_size(optarg, &opt.mlen);
			break;
		case 'b':
			sp.budget_s = strtod(optarg, &end);
			ok = *optarg && *end == '\0' && sp.budget_s >= 0 && sp.budget_s < 1e6;
			break;
		case 'n':
			ok = parse_size(optarg, &sp.min_samples);
			break;
		case 'N':
			ok = parse_size(optarg, &sp.max_samples) && sp.max_samples > 0;
			break;
		case 'w':
			ok = parse_size(optarg, &sp.warmup);
			break;
		case 'k':
			ok = parse_size(optarg, &sp.cold) && sp.cold <= 1000000;
			break;
		case 's':
			ok = parse_size(optarg, &v); /* one call per sample: nothing to calibrate */
			break;
		case 'p':
			ok = parse_size(optarg, &opt.pool) && opt.pool > 0;
			break;
		case 'F':
			opt.fixed_message = true;
			break;
		case 'c':
			ok = parse_size(optarg, &v) && v < CPU_SETSIZE;
			cpu = (long) v;
			break;
		case 'C':
			counter_mode = optarg;
			ok = strcmp(optarg, "auto") == 0 || strcmp(optarg, "perf") == 0 || strcmp(optarg, "tsc") == 0 ||
			     strcmp(optarg, "none") == 0;
			break;
		case ':':
			return bad_request("option %s needs a value", argv[optind]);
		default:
			return bad_request("unknown option '%s' for `time` (pqbench --help lists them)", argv[optind]);
		}
		if (!ok) {
			return bad_request("bad value for --%s: '%s'", option_name(ch), optarg);
		}
	}
	if (optind < argc - 1) {
		return bad_request("unexpected argument '%s' for `time`", argv[optind + 1]);
	}
	if (!alg) {
		return bad_request("`time` needs --alg NAME (pqbench list names the enabled ones)");
	}

	OQS_init();
	if (sp.min_samples > sp.max_samples) {
		sp.min_samples = sp.max_samples;
	}

	ctx c;
	memset(&c, 0, sizeof c);
	c.opt = &opt;
	const op_spec *table;
	size_t table_n;
	const char *kind;
	if (OQS_SIG_alg_is_enabled(alg)) {
		c.sig = OQS_SIG_new(alg);
		table = SIG_OPS;
		table_n = 3;
		kind = "sig";
	} else if (OQS_KEM_alg_is_enabled(alg)) {
		c.kem = OQS_KEM_new(alg);
		table = KEM_OPS;
		table_n = 3;
		kind = "kem";
	} else {
		char msg[512];
		bool known = false;
		for (int i = 0; i < OQS_SIG_alg_count(); i++) {
			known |= strcmp(OQS_SIG_alg_identifier((size_t) i), alg) == 0;
		}
		for (int i = 0; i < OQS_KEM_alg_count(); i++) {
			known |= strcmp(OQS_KEM_alg_identifier((size_t) i), alg) == 0;
		}
		snprintf(msg, sizeof msg, known ? "algorithm '%s' is not enabled in this liboqs build (%s)"
		         : "unknown algorithm '%s' (`pqbench list` names the ones liboqs %s enables)", alg,
		         known ? PQBENCH_BUILD : OQS_version());
		OQS_destroy();
		return bad_request("%s", msg);
	}
	if (!c.sig && !c.kem) {
		return bad_request("OQS_SIG_new/OQS_KEM_new returned NULL for %s", alg);
	}

	/* The operations, in the order given. */
	const op_spec *chosen[16];
	size_t nchosen = 0;
	char ops_default[64];
	snprintf(ops_default, sizeof ops_default, "%s,%s,%s", table[0].name, table[1].name, table[2].name);
	char *ops = strdup(ops_arg ? ops_arg : ops_default);
	for (char *tok = strtok(ops, ","); tok; tok = strtok(NULL, ",")) {
		const op_spec *found = NULL;
		for (size_t i = 0; i < table_n; i++) {
			if (strcmp(table[i].name, tok) == 0) {
				found = &table[i];
			}
		}
		if (!found || nchosen == sizeof chosen / sizeof chosen[0]) {
			return bad_request("operation '%s' is not one of %s for %s algorithm %s", tok, ops_default, kind,
			                   alg);
		}
		chosen[nchosen++] = found;
	}
	free(ops);
	if (nchosen == 0) {
		return bad_request("--ops names no operation (one or more of %s for %s algorithm %s)", ops_default, kind,
		                   alg);
	}
	/* The pool of pre-made signatures / ciphertexts is only needed by verify and
	 * decaps; otherwise one entry (made and checked at set-up, including the
	 * tampered cases) is enough.  Never more entries than samples. */
	bool needs_pool = false;
	for (size_t i = 0; i < nchosen; i++) {
		needs_pool |= strcmp(chosen[i]->name, "verify") == 0 || strcmp(chosen[i]->name, "decaps") == 0;
	}
	if (!needs_pool || opt.fixed_message) {
		opt.pool = 1;
	} else if (opt.pool > sp.max_samples) {
		opt.pool = sp.max_samples;
	}

	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int) cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0) {
			return bad_request("cannot pin to cpu %ld: %s", cpu, strerror(errno));
		}
	}
	if (!counter_open(counter_mode)) {
		return bad_request("%s", cycles_error);
	}
	uint64_t ovh_ns;
	int64_t ovh_cyc;
	timer_overhead(&ovh_ns, &ovh_cyc);

	/* Buffers. */
	size_t lpk = c.sig ? c.sig->length_public_key : c.kem->length_public_key;
	size_t lsk = c.sig ? c.sig->length_secret_key : c.kem->length_secret_key;
	c.pk = xmalloc(lpk);
	c.sk = xmalloc(lsk);
	c.kpk = xmalloc(lpk);
	c.ksk = xmalloc(lsk);
	bool setup_ok;
	if (c.sig) {
		size_t ls = c.sig->length_signature;
		c.msg = xmalloc(opt.mlen);
		c.scratch_msg = xmalloc(opt.mlen);
		c.sigbuf = xmalloc(ls);
		c.scratch_sig = xmalloc(ls);
		c.pool_msg = xmalloc(opt.pool * sizeof *c.pool_msg);
		c.pool_sig = xmalloc(opt.pool * sizeof *c.pool_sig);
		c.pool_siglen = xmalloc(opt.pool * sizeof *c.pool_siglen);
		for (size_t i = 0; i < opt.pool; i++) {
			c.pool_msg[i] = xmalloc(opt.mlen);
			c.pool_sig[i] = xmalloc(ls);
		}
		setup_ok = setup_sig(&c);
	} else {
		size_t lct = c.kem->length_ciphertext, lss = c.kem->length_shared_secret;
		c.ct = xmalloc(lct);
		c.scratch_ct = xmalloc(lct);
		c.ss = xmalloc(lss);
		c.ss2 = xmalloc(lss);
		c.pool_ct = xmalloc(opt.pool * sizeof *c.pool_ct);
		c.pool_ss = xmalloc(opt.pool * sizeof *c.pool_ss);
		for (size_t i = 0; i < opt.pool; i++) {
			c.pool_ct[i] = xmalloc(lct);
			c.pool_ss[i] = xmalloc(lss);
		}
		setup_ok = setup_kem(&c);
	}
	char setup_error[512];
	snprintf(setup_error, sizeof setup_error, "set-up: %s", c.err);

	op_result *res = xmalloc(nchosen * sizeof *res);
	bool all_ok = setup_ok;
	for (size_t i = 0; i < nchosen; i++) {
		if (setup_ok) {
			run_op(chosen[i], &c, &sp, &res[i]);
		} else {
			memset(&res[i], 0, sizeof res[i]);
			res[i].spec = chosen[i];
			series_init(&res[i].cold, 1);
			series_init(&res[i].warm, 1);
			series_init(&res[i].main, 1);
			res[i].stopped_by = "failure";
			snprintf(res[i].error, sizeof res[i].error, "%s", setup_error);
		}
		all_ok &= res[i].verified;
	}

	/* Observed signature length: the first pool signature (a message of
	 * --message-bytes), and the range seen by the sign operation. */
	FILE *f = stdout;
	fputs("{", f);
	print_head(f);
	fputs("\"implementation\": \"liboqs\", \"version\": ", f);
	json_str(f, OQS_version());
	fputs(", \"clock\": \"clock_gettime(CLOCK_MONOTONIC)\", ", f);
	print_build_info(f);
	fputs(", \"cycles_source\": ", f);
	json_str(f, COUNTER_LABEL[counter]);
	fputs(", \"cycles_error\": ", f);
	json_str(f, cycles_error);
	fputs(", \"counter_requested\": ", f);
	json_str(f, counter_mode);
	fputs(", \"timer\": \"clock_gettime(CLOCK_MONOTONIC)\"", f);
	fprintf(f, ", \"timer_overhead_ns\": %" PRIu64, ovh_ns);
	if (ovh_cyc >= 0) {
		fprintf(f, ", \"timer_overhead_cycles\": %" PRId64, ovh_cyc);
	} else {
		fputs(", \"timer_overhead_cycles\": null", f);
	}
	fprintf(f, ", \"cpu\": %ld", cpu);
	fputs(", \"algorithm\": ", f);
	json_str(f, alg);
	fprintf(f, ", \"kind\": \"%s\"", kind);
	fputs(", \"alg_version\": ", f);
	json_str(f, c.sig ? c.sig->alg_version : c.kem->alg_version);
	fprintf(f, ", \"claimed_nist_level\": %u", (unsigned) (c.sig ? c.sig->claimed_nist_level
	        : c.kem->claimed_nist_level));
	fprintf(f, ", \"public_key_bytes\": %zu, \"secret_key_bytes\": %zu", lpk, lsk);
	if (c.sig) {
		fprintf(f, ", \"euf_cma\": %s, \"suf_cma\": %s", c.sig->euf_cma ? "true" : "false",
		        c.sig->suf_cma ? "true" : "false");
		if (setup_ok) {
			fprintf(f, ", \"signature_bytes\": %zu", c.pool_siglen[0]);
		} else {
			fputs(", \"signature_bytes\": null", f);
		}
		fprintf(f, ", \"signature_max_bytes\": %zu", c.sig->length_signature);
	} else {
		fprintf(f, ", \"ind_cca\": %s", c.kem->ind_cca ? "true" : "false");
		fprintf(f, ", \"ciphertext_bytes\": %zu, \"shared_secret_bytes\": %zu", c.kem->length_ciphertext,
		        c.kem->length_shared_secret);
	}
	/* The protocol's sizes, from the lengths liboqs states (a signature: the first set-up signature's). */
	fprintf(f, ", \"sizes\": {\"public_key\": %zu, \"secret_key\": %zu, \"secret_key_format\": \"liboqs\"", lpk,
	        lsk);
	if (c.sig && setup_ok) {
		fprintf(f, ", \"signature\": %zu", c.pool_siglen[0]);
	} else if (c.kem) {
		fprintf(f, ", \"ciphertext\": %zu, \"shared_secret\": %zu", c.kem->length_ciphertext,
		        c.kem->length_shared_secret);
	}
	fputs("}", f);
	fprintf(f, ", \"budget_s\": %.6g, \"min_samples\": %zu, \"max_samples\": %zu, \"warmup\": %zu, \"pool\": %zu",
	        sp.budget_s, sp.min_samples, sp.max_samples, sp.warmup, opt.pool);
	fprintf(f, ", \"message_mode\": \"%s\"",
	        opt.fixed_message ? "fixed" : "fresh-random-per-sample (sign), pool (verify)");
	fprintf(f, ", \"verified\": %s", all_ok ? "true" : "false");
	fputs(", \"operations\": [", f);
	for (size_t i = 0; i < nchosen; i++) {
		op_result *r = &res[i];
		fprintf(f, "%s{\"operation\": \"%s\"", i ? ", " : "", r->spec->name);
		if (r->spec->uses_message) {
			fprintf(f, ", \"message_bytes\": %zu", opt.mlen);
		} else {
			fputs(", \"message_bytes\": null", f);
		}
		fprintf(f, ", \"loops\": 1, \"warmup_batches\": %zu", sp.warmup);
		fprintf(f, ", \"samples\": %zu, \"verified\": %s, \"error\": ", r->main.n, r->verified ? "true" : "false");
		json_str(f, r->error);
		fprintf(f, ", \"checks\": %zu, \"stopped_by\": \"%s\", \"elapsed_s\": %.6f, \"cycles_dropped\": %zu",
		        r->checks, r->stopped_by, r->elapsed_s, r->cycles_dropped);
		if (strcmp(r->spec->name, "sign") == 0 && r->sig_max > 0) {
			fprintf(f, ", \"signature_bytes_min\": %zu, \"signature_bytes_max\": %zu", r->sig_min, r->sig_max);
		}
		fputs(", ", f);
		print_series(f, "samples_ns", "samples_cycles", &r->main);
		fputs(", ", f);
		print_series(f, "warmup_ns", "warmup_cycles", &r->warm);
		fputs(", ", f);
		print_series(f, "cold_ns", "cold_cycles", &r->cold);
		fputs("}", f);
		series_free(&r->cold);
		series_free(&r->warm);
		series_free(&r->main);
	}
	fputs("]}\n", f);
	fflush(f);

	if (c.sig) {
		for (size_t i = 0; i < opt.pool; i++) {
			free(c.pool_msg[i]);
			free(c.pool_sig[i]);
		}
		free(c.pool_msg);
		free(c.pool_sig);
		free(c.pool_siglen);
		free(c.msg);
		free(c.scratch_msg);
		free(c.sigbuf);
		free(c.scratch_sig);
		OQS_SIG_free(c.sig);
	} else {
		for (size_t i = 0; i < opt.pool; i++) {
			free(c.pool_ct[i]);
			free(c.pool_ss[i]);
		}
		free(c.pool_ct);
		free(c.pool_ss);
		free(c.ct);
		free(c.scratch_ct);
		free(c.ss);
		free(c.ss2);
		OQS_KEM_free(c.kem);
	}
	free(c.pk);
	free(c.sk);
	free(c.kpk);
	free(c.ksk);
	free(res);
	if (cycles_fd >= 0) {
		close(cycles_fd);
	}
	OQS_destroy();
	return all_ok ? 0 : 1;
}
