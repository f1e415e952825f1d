"""pqlab's timing screen for Python libraries (native/PROTOCOL.md, protocol 2: `list` and `screen`).

    python screen.py list                     the targets whose library imports in this interpreter
    python screen.py screen < request         time one target's classes in the request's block order

The request comes on stdin as JSON or in the protocol's line form (one `name value ...` line per field, one
`order ...` line per block): text that starts with "{" is JSON.  Runs as two programs: "python-leaky" under
build/venv, the locked environment of known-leaky releases (python-rsa 4.9, ecdsa 0.19.1, cryptography 3.2.1;
requirements.txt, build.sh), and "python" under pqlab's own interpreter (cryptography, hmac); it tells which
from the interpreter it runs in.  Standard library only, plus whichever target libraries import.

Every class's input and expected output (a value, or the exception type it must raise) is prepared and checked
before timing.  Each timed call is bracketed by two time.perf_counter_ns() readings with the garbage collector
disabled; its output is checked after the second reading and released only then (no call pays for freeing
the previous call's output).  Each class's input exists as COPIES equal objects, block b using copy
b % COPIES: equal inputs at two addresses can differ by ~10 ns (seen with ML-KEM ciphertexts), which would
pass for a class effect.  The power check (pqlab.checks.leakage.injected) sends `delays_ns`, one per class: a
class with a delay busy-waits on the counter after its call, before the second reading, and the document's
`injected_ns` gives the median of what each class's wait really added.

Inputs come from the request's seed (random.Random: test keys): RSA primes drawn here (Miller-Rabin,
e = 65537) and hand-built PKCS#1 v1.5 blocks encrypted with the raw public operation; a P-256 key and two
messages searched (untimed) with this program's RFC 6979 so that the nonce is full length or has SHORT_BITS
leading zero bits; an ML-KEM-768 key from a 64-byte seed (encapsulate() takes none).  The RSA-1024 variant
exists because python-rsa's RSA-2048 is slow and its modular exponentiation noisy: its small leak takes
minutes to show at 2048 bits.
"""
import difflib
import gc
import hashlib
import hmac
import importlib
import inspect
import json
import os
import platform
import random
import sys
import time

PROTOCOL, COUNTER, COMMANDS = 2, "time.perf_counter_ns", ["screen"]
#: The interpreter of build/venv (the locked known-leaky releases) is the "python-leaky" program; any other
#: (pqlab's own) is "python".
LEAKY_VENV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "build", "venv")
PROGRAM = "python-leaky" if os.path.realpath(sys.prefix) == os.path.realpath(LEAKY_VENV) else "python"
RUNTIME = f"{platform.python_implementation()} {platform.python_version()}"
#: The request's fields in the line form: name -> how its words read (order: one line per block).
LINE_FIELDS = {"target": "word", "classes": "words", "order": "rows", "warmup_blocks": "int", "seed": "int",
               "delays_ns": "ints"}
MSG_LEN = 48  # bytes of the valid RSA plaintext
COPIES = 16  # equal objects per class input, used in turn (block b: copy b % COPIES)
SHORT_BITS = 12  # leading zero bits of the short nonce (about 4000 candidate messages, well under a second)
P256_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
RSA_CLASSES = ["valid", "bad-header", "no-separator", "short-padding"]
NONCE_CLASSES = ["full-nonce", "short-nonce"]
ECDSA_MODULE = "cryptography.hazmat.primitives.asymmetric.ec"
SMALL_PRIMES = [p for p in range(3, 2000, 2) if all(p % q for q in range(3, int(p ** 0.5) + 1, 2))]


class CheckFailed(Exception):
    """CheckFailed(class, message): a class's input does not behave as its class says (exit 3)."""


def fail(code, **document):
    print(json.dumps(document))
    sys.exit(code)


def module(name):
    try:
        return importlib.import_module(name)
    except Exception:  # a library that does not load here is simply absent
        return None


# --------------------------------------------------------------------------- inputs derived from the seed

def probable_prime(c, rng, rounds=12):
    if any(c % p == 0 for p in SMALL_PRIMES):
        return False
    d, s = c - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(rng.randrange(2, c - 1), d, c)
        if x in (1, c - 1):
            continue
        for _ in range(s - 1):
            x = x * x % c
            if x == c - 1:
                break
        else:
            return False
    return True


RSA_KEYS = {}


def rsa_numbers(seed, bits):
    """(n, e, d, p, q): both primes with their top two bits set, so that n has exactly `bits` bits."""
    if (seed, bits) not in RSA_KEYS:
        rng, e, primes = random.Random(f"pqlab-leakage rsa {bits} {seed}"), 65537, []
        while len(primes) < 2:
            c = rng.getrandbits(bits // 2) | (3 << (bits // 2 - 2)) | 1
            if c % e != 1 and c not in primes and probable_prime(c, rng):
                primes.append(c)
        p, q = primes
        RSA_KEYS[seed, bits] = (p * q, e, pow(e, -1, (p - 1) * (q - 1)), p, q)
    return RSA_KEYS[seed, bits]


def rsa_inputs(seed, bits, attempt=0):
    """({class: ciphertext}, the valid class's message); `attempt` draws other padding and filler (the same
    message)."""
    n, e = rsa_numbers(seed, bits)[:2]
    rng, size = random.Random(f"pqlab-leakage rsa-inputs {bits} {seed}"), bits // 8
    nonzero = lambda count: bytes(rng.randrange(1, 256) for _ in range(count))  # noqa: E731
    message = rng.randbytes(MSG_LEN)
    if attempt:
        rng.seed(f"pqlab-leakage rsa-inputs {bits} {seed} attempt {attempt}")
    padding = nonzero(size - 3 - MSG_LEN)
    blocks = {"valid": b"\x00\x02" + padding + b"\x00" + message,
              "bad-header": b"\x00\x03" + padding + b"\x00" + message,
              "no-separator": b"\x00\x02" + padding + nonzero(1 + MSG_LEN),
              "short-padding": b"\x00\x02" + nonzero(5) + b"\x00" + nonzero(size - 8)}
    return {k: pow(int.from_bytes(v, "big"), e, n).to_bytes(size, "big") for k, v in blocks.items()}, message


def rfc6979_k(x, digest, n=P256_N):
    """RFC 6979 (section 3.2) nonce for a 256-bit group order and HMAC-SHA-256 (qlen = hlen = 256)."""
    mac = lambda key, data: hmac.new(key, data, hashlib.sha256).digest()  # noqa: E731
    xh = x.to_bytes(32, "big") + (int.from_bytes(digest, "big") % n).to_bytes(32, "big")
    k = mac(b"\x00" * 32, b"\x01" * 32 + b"\x00" + xh)
    v = mac(k, b"\x01" * 32)
    k = mac(k, v + b"\x01" + xh)
    v = mac(k, v)
    while True:
        v = mac(k, v)
        if 1 <= int.from_bytes(v, "big") < n:
            return int.from_bytes(v, "big")
        k = mac(k, v + b"\x00")
        v = mac(k, v)


def p256_inputs(seed):
    """(secret scalar, {class: (message, k)}): for each class the first message whose nonce fits it."""
    x, found, i = random.Random(f"pqlab-leakage p256 {seed}").randrange(1, P256_N), {}, 0
    while len(found) < 2:
        message = hashlib.sha256(b"pqlab-leakage p256 message %d %d" % (seed, i)).digest()
        k, i = rfc6979_k(x, hashlib.sha256(message).digest()), i + 1
        klass = "full-nonce" if k >> 255 else "short-nonce" if k >> (256 - SHORT_BITS) == 0 else None
        if klass and klass not in found:
            found[klass] = (message, k)
    return x, {c: found[c] for c in NONCE_CLASSES}


# --------------------------------------------------------------------------- the targets
# prepare(lib, seed) -> (call, {class: (input, spec)}); spec ("equal", value): the output must be value;
# ("refuse", valid_value, exception types): one of those exceptions, or a deterministic value other than
# valid_value (implicit rejection).

#: Draws of padding tried per class for a synthetic plaintext as long as the valid message (implicit
#: rejection).
LENGTH_ATTEMPTS = 5000


def rsa_cases(seed, bits, refusal, decrypt=None):
    """The RSA classes.  With `decrypt` (an implementation with implicit rejection, whose time grows with
    the plaintext it returns), each invalid class is drawn again until its pseudo-random plaintext is as long
    as the valid message, so that the classes differ in validity only, not in the length of what is
    returned."""
    cts, message = rsa_inputs(seed, bits)
    if decrypt is not None:
        for k in cts:
            for attempt in range(1, LENGTH_ATTEMPTS + 1):
                if k == "valid" or len(decrypt(cts[k])) == MSG_LEN:
                    break
                cts[k] = rsa_inputs(seed, bits, attempt)[0][k]
            else:
                fail(3, error=f"no {k} ciphertext in {LENGTH_ATTEMPTS} draws decrypts to {MSG_LEN} bytes",
                     **{"class": k})
    return {k: (ct, ("equal", message) if k == "valid" else ("refuse", message, refusal))
            for k, ct in cts.items()}


def prepare_python_rsa(lib, seed, bits=2048):
    key = lib.PrivateKey(*rsa_numbers(seed, bits))
    return lambda ct: lib.decrypt(ct, key), rsa_cases(seed, bits, (lib.DecryptionError,))


def prepare_crypto_rsa(lib, seed, bits=2048):
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    n, e, d, p, q = rsa_numbers(seed, bits)
    key = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p),
                                rsa.RSAPublicNumbers(e, n)).private_key()
    pad = padding.PKCS1v15()
    call = lambda ct: key.decrypt(ct, pad)  # noqa: E731
    implicit = rsa_refusal(lib).startswith("invalid classes: implicit rejection")
    return call, rsa_cases(seed, bits, (ValueError,), call if implicit else None)


def nonce_cases(call, classes, check):
    """The two messages' cases, after check(message, k, signature) -> '' or the problem, on each class."""
    for klass, (message, k) in classes.items():
        try:
            problem = check(message, k, call(message))
        except Exception as e:  # BadSignatureError, InvalidSignature
            problem = f"the signature does not verify ({type(e).__name__})"
        if problem:
            raise CheckFailed(klass, problem)
    return call, {c: (m, ("equal", call(m))) for c, (m, _) in classes.items()}


def prepare_python_ecdsa(lib, seed):
    x, classes = p256_inputs(seed)
    key = lib.SigningKey.from_secret_exponent(x, curve=lib.NIST256p, hashfunc=hashlib.sha256)

    def check(message, k, sig):
        key.verifying_key.verify(sig, message, hashfunc=hashlib.sha256)
        if lib.rfc6979.generate_k(P256_N, x, hashlib.sha256, hashlib.sha256(message).digest()) != k:
            return "ecdsa's RFC 6979 nonce differs from this program's"
        if int.from_bytes(sig[:32], "big") != (lib.NIST256p.generator * k).x() % P256_N:
            return "the signature's r is not x(k*G) for the class's nonce"
        return ""
    return nonce_cases(lambda m: key.sign_deterministic(m, hashfunc=hashlib.sha256), classes, check)


def prepare_crypto_ecdsa(lib, seed):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, utils
    x, classes = p256_inputs(seed)
    key = ec.derive_private_key(x, ec.SECP256R1())
    algorithm = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)

    def check(message, k, sig):
        key.public_key().verify(sig, message, ec.ECDSA(hashes.SHA256()))
        nonce_point = ec.derive_private_key(k, ec.SECP256R1()).public_key().public_numbers()
        return "" if utils.decode_dss_signature(sig)[0] == nonce_point.x % P256_N else \
            "the signature's r is not x(k*G) for the class's RFC 6979 nonce"
    return nonce_cases(lambda m: key.sign(m, algorithm), classes, check)


def prepare_compare_digest(lib, seed):
    a = random.Random(f"pqlab-leakage hmac {seed}").randbytes(32)
    flip = lambda i: a[:i] + bytes([a[i] ^ 1]) + a[i + 1:]  # noqa: E731
    cases = {"equal": bytes(bytearray(a)), "differ-first": flip(0), "differ-last": flip(31)}
    return lambda b: lib.compare_digest(a, b), {k: (v, ("equal", k == "equal")) for k, v in cases.items()}


def prepare_mlkem(lib, seed):
    key = lib.MLKEM768PrivateKey.from_seed_bytes(random.Random(f"pqlab-leakage ml-kem {seed}").randbytes(64))
    secret, ct = key.public_key().encapsulate()
    flip = lambda i: ct[:i] + bytes([ct[i] ^ 1]) + ct[i + 1:]  # noqa: E731
    cases = {"valid": ct, "invalid": flip(len(ct) // 2), "invalid-last": flip(len(ct) - 1)}
    return key.decapsulate, {k: (v, ("equal", secret) if k == "valid" else ("refuse", secret, ()))
                             for k, v in cases.items()}


def openssl(lib):
    from cryptography.hazmat.backends.openssl import backend
    return f"linked with {backend.openssl_version_text()}"


def rsa_refusal(lib):
    """How this cryptography refuses a PKCS#1 v1.5 block with a bad header (probed with a throwaway key)."""
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    key = rsa.generate_private_key(65537, 1024)
    pub = key.public_key().public_numbers()
    try:
        key.decrypt(pow(3 << 1008 | 1, pub.e, pub.n).to_bytes(128, "big"), padding.PKCS1v15())
        return ("invalid classes: implicit rejection (a deterministic pseudo-random plaintext is returned; "
                f"each invalid class is drawn again until that plaintext is {MSG_LEN} bytes, as long as the "
                "valid message)")
    except ValueError:
        return "invalid classes: ValueError (no implicit rejection)"


RSA_NOTES = ("hand-built PKCS#1 v1.5 blocks encrypted with the raw public operation: valid (48-byte "
             "message), bad-header (00 03), no-separator (no 00 after the padding), short-padding (00 at "
             "byte 7); key e=65537, "
             "primes drawn from the seed by this program")
PY_RSA_NOTES = RSA_NOTES + "; invalid classes raise rsa.DecryptionError"
NONCE_NOTES = (f"RFC 6979 signatures (SHA-256) of two 32-byte messages under one key, chosen so that the "
               "nonce k "
               f"has its top bit set (full-nonce) or {SHORT_BITS} leading zero bits (short-nonce); key and "
               "messages from the seed")
FIELDS = ("name", "implementation", "module", "operation", "classes", "prepare", "notes", "usable")
TARGETS = [dict(zip(FIELDS, t))
           for t in [
    ("rsa-pkcs1v15-decrypt", "python-rsa", "rsa", "RSA-2048 PKCS#1 v1.5 decryption (rsa.decrypt)",
     RSA_CLASSES,
     prepare_python_rsa, lambda lib: PY_RSA_NOTES, None),
    ("rsa-1024-pkcs1v15-decrypt", "python-rsa", "rsa", "RSA-1024 PKCS#1 v1.5 decryption (rsa.decrypt)",
     RSA_CLASSES, lambda lib, seed: prepare_python_rsa(lib, seed, 1024), lambda lib: PY_RSA_NOTES, None),
    ("rsa-512-pkcs1v15-decrypt", "python-rsa", "rsa", "RSA-512 PKCS#1 v1.5 decryption (rsa.decrypt)",
     RSA_CLASSES, lambda lib, seed: prepare_python_rsa(lib, seed, 512), lambda lib: PY_RSA_NOTES, None),
    ("cryptography-rsa-pkcs1v15-decrypt", "cryptography", "cryptography", "RSA-2048 PKCS#1 v1.5 decryption "
     "(private_key.decrypt(ct, PKCS1v15()))", RSA_CLASSES, prepare_crypto_rsa,
     lambda lib: f"{openssl(lib)}; {RSA_NOTES}; {rsa_refusal(lib)}", None),
    ("ecdsa-p256-sign", "python-ecdsa", "ecdsa",
     "ECDSA P-256 deterministic signing (sign_deterministic, SHA-256)",
     NONCE_CLASSES, prepare_python_ecdsa, lambda lib: NONCE_NOTES, None),
    ("cryptography-ecdsa-p256-sign", "cryptography", "cryptography", "ECDSA P-256 deterministic signing "
     "(ECDSA(SHA256(), deterministic_signing=True))", NONCE_CLASSES, prepare_crypto_ecdsa,
     lambda lib: f"{openssl(lib)}; {NONCE_NOTES}",  # cryptography >= 44
     lambda lib: "deterministic_signing" in inspect.signature(module(ECDSA_MODULE).ECDSA).parameters),
    ("hmac-compare-digest", "CPython hmac", "hmac", "hmac.compare_digest of two 32-byte values",
     ["equal", "differ-first", "differ-last"], prepare_compare_digest,
     lambda lib: "a fixed 32-byte value against a copy, and against it with its first or last byte flipped",
     None),
    ("cryptography-ml-kem-768-decaps", "cryptography", "cryptography.hazmat.primitives.asymmetric.mlkem",
     "ML-KEM-768 decapsulation", ["valid", "invalid", "invalid-last"], prepare_mlkem,
     lambda lib: f"{openssl(lib)}; invalid: the middle or the last ciphertext byte flipped (implicit "
                 "rejection: "
                 "another shared secret); key from the seed, ciphertext from encapsulate() (not seeded)",
     lambda lib: module("cryptography.hazmat.backends.openssl").backend.mlkem_supported()),
]]


def available():
    """{name: (target, loaded module)} for the targets whose library loads here and has what they need."""
    found = {}
    for t in TARGETS:
        lib = module(t["module"])
        try:
            if lib is not None and (t["usable"] is None or t["usable"](lib)):
                found[t["name"]] = (t, lib)
        except Exception:  # a library too old for the probe lacks the feature
            pass
    return found


def version(t, lib):
    """The version of the library actually loaded (for hmac: the interpreter's)."""
    if t["module"] == "hmac":
        return platform.python_version()
    return module(t["module"].split(".")[0]).__version__


def describe(t, lib):
    return {"name": t["name"], "implementation": t["implementation"], "version": version(t, lib),
            "operation": t["operation"], "classes": list(t["classes"]), "counter": COUNTER,
            "notes": t["notes"](lib)}


# --------------------------------------------------------------------------- checks and timing

def outcome(call, x):
    try:
        return call(x)
    except Exception as e:  # the exception's type is the outcome
        return type(e)


show = lambda out: out.__name__ if isinstance(out, type) else repr(out)[:60]  # noqa: E731


def expected_outputs(call, cases, classes):
    """Each class's expected output (a value, or the exception type it raises), checked before any timing."""
    expected = {}
    for klass in dict.fromkeys(classes):
        x, spec = cases[klass]
        out = outcome(call, x)
        if outcome(call, x) != out:
            raise CheckFailed(klass, "two calls on the same input gave different outputs")
        if spec[0] == "equal" and out != spec[1]:
            raise CheckFailed(klass, f"the output is not the class's answer (got {show(out)})")
        if spec[0] == "refuse" and out == spec[1]:
            raise CheckFailed(klass, "an input that must be refused gave the valid input's answer")
        if spec[0] == "refuse" and isinstance(out, type) and not issubclass(out, spec[2]):
            raise CheckFailed(klass, f"an input that must be refused raised {show(out)} (unexpected type)")
        expected[klass] = out
    return [expected[k] for k in classes]


def run_blocks(call, inputs, expected, order, times, classes, delays=None, spun=None):
    """Runs `order`'s blocks, recording times[b][i] unless `times` is None (warm-up).  One loop for all
    targets.  `delays` (ns per class, the power check's injection): after the call and before the interval
    closes, a class with a delay busy-waits on the counter until it has advanced that far; what the wait
    really added (the counter's advance over it) goes to spun[i]."""
    pc = time.perf_counter_ns
    delays = delays or [0] * len(classes)
    for b, block in enumerate(order):
        row = times[b] if times is not None else None
        for i in block:
            x = inputs[i][b % COPIES]
            d = delays[i]
            t0 = pc()
            try:
                out = call(x)
                t1 = pc()
            except Exception as e:  # compared with the expected exception type below
                t1 = pc()
                out = type(e)
            if d:
                s = t1
                while t1 - s < d:
                    t1 = pc()
                if spun is not None:
                    spun[i].append(t1 - s)
            if row is not None:
                row[i] = t1 - t0
            if out != expected[i]:
                raise CheckFailed(classes[i], f"block {b}: the output differs from the class's expected one "
                                              f"(got {show(out)})")
            out = None  # freed here, untimed, rather than inside the next call's interval


def refuse(message, name=None, choices=()):
    """Exit 2 (bad request) with `message` and the close matches of `name` among `choices`."""
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.4) if name else []
    fail(2, error=message + (f"; close matches: {', '.join(close)}" if close else ""))


def read_request(text):
    """The request on stdin: JSON when it starts with "{", else the protocol's line form."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError as e:
            refuse(f"the request is not JSON: {e}")
    request = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.split():
            continue
        name, words = line.split()[0], line.split()[1:]
        kind = LINE_FIELDS.get(name)
        if kind is None:
            refuse(f"line {n} of the request: unknown field {json.dumps(name)[:40]} (fields: "
                   f"{', '.join(LINE_FIELDS)})", name, LINE_FIELDS)
        if kind != "rows" and name in request:
            refuse(f"line {n} of the request: {name} is given twice")
        if kind in ("word", "int") and len(words) != 1:
            refuse(f"line {n} of the request: {name} takes one value, not {len(words)}")
        try:
            value = ([int(w) for w in words] if kind in ("rows", "ints") else int(words[0]) if kind == "int"
                     else words[0] if kind == "word" else words)
        except ValueError:
            refuse(f"line {n} of the request: {name} takes whole numbers, not {line.strip()[:60]!r}")
        if kind == "rows":
            request.setdefault(name, []).append(value)
        else:
            request[name] = value
    return request


def parse(request, targets):
    """(target, lib, classes, order, warmup_blocks, seed, delays_ns), or exit 2 naming the problem."""
    if not isinstance(request, dict) or not isinstance(request.get("target"), str):
        refuse('the request names no target (JSON: an object with a "target" name; line form: "target NAME")')
    unknown = [k for k in request if k not in LINE_FIELDS]
    if unknown:
        refuse(f"unknown field {json.dumps(unknown[0])[:40]} in the request (fields: "
               f"{', '.join(LINE_FIELDS)})",
            str(unknown[0]), LINE_FIELDS)
    name, known = request["target"], [t["name"] for t in TARGETS]
    if name not in targets:
        missing = " (its library is not importable in this interpreter)" if name in known else ""
        refuse(f"unknown target {json.dumps(name)}{missing}; available here: {', '.join(targets) or 'none'}",
            name, targets if missing else known)
    t, lib = targets[name]
    classes = request.get("classes") or list(t["classes"])
    if not isinstance(classes, list):
        refuse("classes must be a list of class names")
    for c in classes:
        if c not in t["classes"]:
            refuse(f"unknown class {json.dumps(c)} of target {json.dumps(name)} (its classes: "
                f"{', '.join(t['classes'])})", c if isinstance(c, str) else None, t["classes"])
    order, warmup, seed = request.get("order"), request.get("warmup_blocks", 0), request.get("seed", 0)
    if not isinstance(order, list) or not order:
        refuse("order must be a non-empty list of blocks")
    for b, block in enumerate(order):
        if not isinstance(block, list) or not all(type(i) is int for i in block) or sorted(block) != list(
                range(len(classes))):
            refuse(f"order[{b}] is not a permutation of range({len(classes)}): {json.dumps(block)[:60]}")
    if type(warmup) is not int or warmup < 0:
        refuse(f"warmup_blocks must be a non-negative integer, not {json.dumps(warmup)}")
    if type(seed) is not int:
        refuse(f"seed must be an integer, not {json.dumps(seed)}")
    delays = request.get("delays_ns") or [0] * len(classes)
    if (not isinstance(delays, list) or len(delays) != len(classes)
            or not all(type(d) is int and d >= 0 for d in delays)):
        refuse(f"delays_ns must list one non-negative integer per class ({len(classes)}), not "
               f"{json.dumps(delays)[:60]}")
    return t, lib, classes, order, warmup, seed, delays


def screen(request):
    t, lib, classes, order, warmup, seed, delays = parse(request, available())
    spun = [[] for _ in classes]
    try:
        call, cases = t["prepare"](lib, seed)
        inputs = [[bytes(bytearray(cases[c][0])) for _ in range(COPIES)] for c in classes]
        expected = expected_outputs(call, cases, classes)
        times = [[0] * len(classes) for _ in order]
        gc.collect()
        gc.disable()
        try:
            run_blocks(call, inputs, expected, [order[b % len(order)] for b in range(warmup)], None, classes,
                       delays)
            start = time.perf_counter()
            run_blocks(call, inputs, expected, order, times, classes, delays, spun)
            wall = time.perf_counter() - start
        finally:
            gc.enable()
    except CheckFailed as e:
        fail(3, error=e.args[1], **{"class": e.args[0]})
    document = {"protocol": PROTOCOL, "program": PROGRAM, "target": t["name"],
                "implementation": t["implementation"], "version": version(t, lib),
                "operation": t["operation"],
                "classes": classes, "counter": COUNTER, "times_ns": times,
                "checked": len(order) * len(classes), "wall_s": round(wall, 3)}
    if any(delays):  # the median of what each class's wait really added (0 where it had none)
        document["injected_ns"] = [sorted(w)[len(w) // 2] if w else 0 for w in spun]
    return document


def main(argv):
    if argv == ["list"]:
        print(json.dumps({"protocol": PROTOCOL, "program": PROGRAM, "language": "Python",
                          "toolchain": RUNTIME, "runtime": RUNTIME, "commands": COMMANDS,
                          "targets": [describe(t, lib) for t, lib in available().values()]}))
    elif argv == ["screen"]:
        print(json.dumps(screen(read_request(sys.stdin.read())), separators=(",", ":")))
    else:
        fail(2, error=f"unknown command {' '.join(argv)[:60]!r}: screen.py answers list, or screen with the "
                      "request on stdin (native/PROTOCOL.md)")


if __name__ == "__main__":
    main(sys.argv[1:])
