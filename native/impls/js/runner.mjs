#!/usr/bin/env node
// pqlab implementations runner for JavaScript: the noble libraries (@noble/post-quantum, @noble/curves).
// Speaks native/PROTOCOL.md (version 2): `list`, `time ...`, `serve`.
// Install: npm ci --prefix native/impls/js --no-audit --no-fund
// Run:     node native/impls/js/runner.mjs list | time ... | serve

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

import { ml_kem512, ml_kem768, ml_kem1024 } from '@noble/post-quantum/ml-kem.js';
import { ml_dsa44, ml_dsa65, ml_dsa87 } from '@noble/post-quantum/ml-dsa.js';
import * as slh from '@noble/post-quantum/slh-dsa.js';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { p256 } from '@noble/curves/nist.js';

const PROTOCOL = 2;
const PROGRAM = 'js'; // its name in pqlab.runners.program.REGISTRY
const COMMANDS = ['time', 'serve']; // what it answers besides `list` (program.toml's `commands`)
const IMPL = 'noble';
const MAX_LOOPS = 2 ** 20;

// ---------------------------------------------------------------------------------------------
// Versions: read at run time from the installed packages' package.json files (never typed here).

function packageVersion(entry) {
  // The packages' "exports" do not list package.json, so resolve an exported module and walk up to
  // the package root (the first directory whose package.json has the wanted name).
  const name = entry.split('/').slice(0, 2).join('/');
  let dir = dirname(fileURLToPath(import.meta.resolve(entry)));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === name) return pkg.version;
    } catch {
      // no package.json here: keep walking up
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`cannot find package.json of ${name}`);
    dir = up;
  }
}

const PQ_VERSION = packageVersion('@noble/post-quantum/ml-kem.js');
const CURVES_VERSION = packageVersion('@noble/curves/nist.js');
const HASHES_VERSION = packageVersion('@noble/hashes/sha2.js');
const VERSION = `post-quantum ${PQ_VERSION}, curves ${CURVES_VERSION}`;
const PROVENANCE = `https://www.npmjs.com/package/@noble/post-quantum/v/${PQ_VERSION}`;
const OPTIONS =
  `pure JavaScript (no WebAssembly, no native code), @noble/hashes ${HASHES_VERSION}; ` +
  'randomness from crypto.getRandomValues; ' +
  'ML-DSA and SLH-DSA sign hedged (fresh random) unless deterministic; ' +
  'ECDSA-P256 signs with RFC 6979 deterministic k (noble default) and low S, verifies with lowS: false; ' +
  'Ed25519 verifies with zip215: false (RFC 8032 / FIPS 186-5 rules)';

// ---------------------------------------------------------------------------------------------
// Algorithms: one uniform interface per name.
//   kem: keygen(seed?) -> {pk, sk}; encaps(pk, seed?) -> {ct, ss}; decaps(sk, ct) -> ss
//   sig: keygen(seed?) -> {pk, sk}; sign(sk, msg, deterministic?) -> sig; verify(pk, msg, sig) -> bool

const EMPTY = new Uint8Array(0);

function mlkem(lib) {
  return {
    kind: 'kem',
    seeded: ['keygen', 'encaps'],
    seedLen: { keygen: 64, encaps: 32 },
    skFormat: 'expanded',
    keygen: (seed) => {
      const k = seed === undefined ? lib.keygen() : lib.keygen(seed);
      return { pk: k.publicKey, sk: k.secretKey };
    },
    encaps: (pk, seed) => {
      const r = seed === undefined ? lib.encapsulate(pk) : lib.encapsulate(pk, seed);
      return { ct: r.cipherText, ss: r.sharedSecret };
    },
    decaps: (sk, ct) => lib.decapsulate(ct, sk),
  };
}

function mldsa(lib) {
  return {
    kind: 'sig',
    seeded: ['keygen', 'sign'],
    seedLen: { keygen: 32 },
    skFormat: 'expanded',
    keygen: (seed) => {
      const k = seed === undefined ? lib.keygen() : lib.keygen(seed);
      return { pk: k.publicKey, sk: k.secretKey };
    },
    // Pure ML-DSA with the empty context; extraEntropy false means rnd = 0^32 (FIPS 204 deterministic).
    sign: (sk, msg, deterministic) =>
      deterministic ? lib.sign(msg, sk, { context: EMPTY, extraEntropy: false }) : lib.sign(msg, sk, { context: EMPTY }),
    verify: (pk, msg, sig) => lib.verify(sig, msg, pk, { context: EMPTY }),
  };
}

function slhdsa(lib) {
  return {
    kind: 'sig',
    seeded: ['keygen', 'sign'],
    seedLen: { keygen: lib.lengths.seed }, // SK.seed || SK.prf || PK.seed
    skFormat: 'FIPS 205 (SK.seed || SK.prf || PK.seed || PK.root)',
    keygen: (seed) => {
      const k = seed === undefined ? lib.keygen() : lib.keygen(seed);
      return { pk: k.publicKey, sk: k.secretKey };
    },
    // extraEntropy false means opt_rand = PK.seed (FIPS 205 deterministic variant).
    sign: (sk, msg, deterministic) =>
      deterministic ? lib.sign(msg, sk, { context: EMPTY, extraEntropy: false }) : lib.sign(msg, sk, { context: EMPTY }),
    verify: (pk, msg, sig) => lib.verify(sig, msg, pk, { context: EMPTY }),
  };
}

function needLength(bytes, n, what) {
  if (!(bytes instanceof Uint8Array) || bytes.length !== n)
    throw new Error(`${what} must be ${n} bytes, got ${bytes ? bytes.length : 'none'}`);
}

const X25519 = {
  kind: 'kem',
  dh: true,
  seeded: [],
  seedLen: {},
  skFormat: 'raw',
  keygen: () => {
    const k = x25519.keygen();
    return { pk: k.publicKey, sk: k.secretKey };
  },
  encaps: (pk) => {
    needLength(pk, 32, 'X25519 public key');
    const e = x25519.keygen();
    return { ct: e.publicKey, ss: x25519.getSharedSecret(e.secretKey, pk) };
  },
  decaps: (sk, ct) => {
    needLength(ct, 32, 'X25519 ciphertext');
    return x25519.getSharedSecret(sk, ct);
  },
};

function p256Uncompressed(pk, what) {
  needLength(pk, 65, what);
  if (pk[0] !== 4) throw new Error(`${what} must be an uncompressed SEC 1 point (first byte 04)`);
}

const ECDH_P256 = {
  kind: 'kem',
  dh: true,
  seeded: [],
  seedLen: {},
  skFormat: 'raw',
  keygen: () => {
    const sk = p256.utils.randomSecretKey();
    return { pk: p256.getPublicKey(sk, false), sk };
  },
  encaps: (pk) => {
    p256Uncompressed(pk, 'ECDH-P256 public key');
    const esk = p256.utils.randomSecretKey();
    // getSharedSecret gives the compressed shared point; the shared secret is its x coordinate.
    return { ct: p256.getPublicKey(esk, false), ss: p256.getSharedSecret(esk, pk, true).subarray(1) };
  },
  decaps: (sk, ct) => {
    p256Uncompressed(ct, 'ECDH-P256 ciphertext');
    return p256.getSharedSecret(sk, ct, true).subarray(1);
  },
};

const ED25519 = {
  kind: 'sig',
  seeded: ['keygen', 'sign'],
  seedLen: { keygen: 32 },
  skFormat: 'seed',
  alwaysDeterministic: true,
  keygen: (seed) => {
    const k = seed === undefined ? ed25519.keygen() : ed25519.keygen(seed);
    return { pk: k.publicKey, sk: k.secretKey };
  },
  sign: (sk, msg) => ed25519.sign(msg, sk),
  verify: (pk, msg, sig) => ed25519.verify(sig, msg, pk, { zip215: false }),
};

const ECDSA_P256 = {
  kind: 'sig',
  seeded: ['sign'],
  seedLen: {},
  skFormat: 'raw',
  keygen: () => {
    const sk = p256.utils.randomSecretKey();
    return { pk: p256.getPublicKey(sk, false), sk };
  },
  // prehash: SHA-256 of the message; default (and deterministic: true) is RFC 6979 k;
  // deterministic: false hedges k with fresh randomness (extraEntropy: true).
  sign: (sk, msg, deterministic) =>
    deterministic === false
      ? p256.sign(msg, sk, { prehash: true, format: 'der', lowS: true, extraEntropy: true })
      : p256.sign(msg, sk, { prehash: true, format: 'der', lowS: true }),
  verify: (pk, msg, sig) => p256.verify(sig, msg, pk, { prehash: true, format: 'der', lowS: false }),
};

const ALGORITHMS = new Map([
  ['ML-KEM-512', mlkem(ml_kem512)],
  ['ML-KEM-768', mlkem(ml_kem768)],
  ['ML-KEM-1024', mlkem(ml_kem1024)],
  ['ML-DSA-44', mldsa(ml_dsa44)],
  ['ML-DSA-65', mldsa(ml_dsa65)],
  ['ML-DSA-87', mldsa(ml_dsa87)],
]);
for (const hash of ['SHA2', 'SHAKE'])
  for (const bits of ['128', '192', '256'])
    for (const v of ['s', 'f']) {
      const lib = slh[`slh_dsa_${hash.toLowerCase()}_${bits}${v}`];
      if (lib) ALGORITHMS.set(`SLH-DSA-${hash}-${bits}${v}`, slhdsa(lib));
    }
ALGORITHMS.set('X25519', X25519);
ALGORITHMS.set('ECDH-P256', ECDH_P256);
ALGORITHMS.set('Ed25519', ED25519);
ALGORITHMS.set('ECDSA-P256', ECDSA_P256);

const KIND_OPS = { kem: ['keygen', 'encaps', 'decaps'], sig: ['keygen', 'sign', 'verify'] };

// ---------------------------------------------------------------------------------------------
// Helpers

class BadInput extends Error {}

function levenshtein(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length];
}

function closeMatches(name, candidates, n = 4) {
  const low = String(name).toLowerCase();
  return candidates
    .map((c) => {
      const cl = c.toLowerCase();
      const score = cl === low ? -2 : cl.includes(low) || low.includes(cl) ? -1 : 0;
      return { c, key: score * 1000 + levenshtein(low, cl) };
    })
    .sort((x, y) => x.key - y.key)
    .slice(0, n)
    .map((x) => x.c);
}

function unknownName(what, name, candidates, flag) {
  const close = closeMatches(name, candidates);
  return `unknown ${what} ${JSON.stringify(name)}; close matches: ${close.join(', ')}; ` +
    `pass ${flag} with one of the names that \`list\` prints`;
}

function checkImpl(impl, flag) {
  if (impl !== IMPL) throw new BadInput(unknownName('implementation', impl, [IMPL], flag));
}

function getAlg(name, flag) {
  const a = ALGORITHMS.get(name);
  if (!a) throw new BadInput(unknownName('algorithm', name, [...ALGORITHMS.keys()], flag));
  return a;
}

const toHex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

function fromHex(s, what) {
  if (typeof s !== 'string' || s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s))
    throw new Error(`${what} must be a hex string of even length`);
  return new Uint8Array(Buffer.from(s, 'hex'));
}

function equalBytes(a, b) {
  if (!a || !b || a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

function flipFirst(b) {
  const c = Uint8Array.from(b);
  c[0] ^= 1;
  return c;
}

function makeMessage(n) {
  const m = new Uint8Array(n);
  for (let i = 0; i < n; i++) m[i] = (31 * i + 7) % 256;
  return m;
}

const oneLine = (e) => String(e && e.message !== undefined ? e.message : e).replace(/\s+/g, ' ').trim();

// ---------------------------------------------------------------------------------------------
// list

function cmdList() {
  return {
    protocol: PROTOCOL,
    program: PROGRAM,
    language: 'JavaScript',
    toolchain: process.version,
    commands: COMMANDS,
    implementations: [
      { implementation: IMPL, version: VERSION, package: '@noble/post-quantum, @noble/curves (npm)', provenance: PROVENANCE, options: OPTIONS },
    ],
    algorithms: [...ALGORITHMS.entries()].map(([name, a]) => ({
      implementation: IMPL,
      algorithm: name,
      kind: a.kind,
      seeded: [...a.seeded],
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// time

function parseTimeArgs(argv) {
  const spec = {
    '--impl': 'str', '--alg': 'str', '--ops': 'str', '--budget': 'float', '--min-samples': 'int',
    '--max-samples': 'int', '--warmup': 'int', '--sample-ns': 'int', '--message-bytes': 'int',
  };
  const v = {};
  for (let i = 0; i < argv.length; i++) {
    let flag = argv[i];
    let val;
    const eq = flag.indexOf('=');
    if (flag.startsWith('--') && eq > 0) {
      val = flag.slice(eq + 1);
      flag = flag.slice(0, eq);
    }
    if (!(flag in spec)) {
      const close = closeMatches(flag, Object.keys(spec), 3);
      throw new BadInput(`unknown option ${JSON.stringify(flag)} for time; close matches: ${close.join(', ')}`);
    }
    if (val === undefined) {
      if (i + 1 >= argv.length) throw new BadInput(`option ${flag} needs a value, e.g. ${flag} 1`);
      val = argv[++i];
    }
    const type = spec[flag];
    if (type === 'str') v[flag] = val;
    else if (type === 'float') {
      const x = Number(val);
      if (val.trim() === '' || !Number.isFinite(x) || x < 0)
        throw new BadInput(`${flag} must be a number of seconds >= 0, got ${JSON.stringify(val)}`);
      v[flag] = x;
    } else {
      if (!/^[0-9]+$/.test(val) || !Number.isSafeInteger(Number(val)))
        throw new BadInput(`${flag} must be a whole number >= 0, got ${JSON.stringify(val)}`);
      v[flag] = Number(val);
    }
  }
  if (v['--impl'] === undefined) throw new BadInput('time needs --impl (e.g. --impl noble)');
  if (v['--alg'] === undefined) throw new BadInput('time needs --alg (e.g. --alg ML-KEM-768); `list` prints the names');
  checkImpl(v['--impl'], '--impl');
  const alg = getAlg(v['--alg'], '--alg');
  const kindOps = KIND_OPS[alg.kind];
  const ops = v['--ops'] === undefined ? [...kindOps] : v['--ops'].split(',').map((s) => s.trim());
  for (const op of ops)
    if (!kindOps.includes(op))
      throw new BadInput(`operation ${JSON.stringify(op)} is not one of ${alg.kind} ${v['--alg']}'s operations; use --ops with ${kindOps.join(',')}`);
  const o = {
    impl: v['--impl'], algName: v['--alg'], alg, ops,
    budget: v['--budget'] ?? 1, minSamples: v['--min-samples'] ?? 10, maxSamples: v['--max-samples'] ?? 100000,
    warmup: v['--warmup'] ?? 3, sampleNs: v['--sample-ns'] ?? 1000000, messageBytes: v['--message-bytes'] ?? 32,
  };
  if (o.minSamples < 1) throw new BadInput('--min-samples must be at least 1');
  if (o.maxSamples < o.minSamples)
    throw new BadInput(`--max-samples (${o.maxSamples}) must be at least --min-samples (${o.minSamples})`);
  return o;
}

// One batch of `loops` calls between two reads of the monotonic clock. Every call's thrown error is
// counted, and for verify every false return; the last output is kept for the check after the batch.
function runBatch(call, loops, isVerify) {
  let errors = 0;
  let last;
  let firstError;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < loops; i++) {
    try {
      last = call();
      if (isVerify && last !== true) errors++;
    } catch (e) {
      errors++;
      if (firstError === undefined) firstError = e;
    }
  }
  const t1 = process.hrtime.bigint();
  return { ns: Number(t1 - t0), errors, last, firstError };
}

function timeOperation(o, op, setup) {
  const { alg } = o;
  const msg = setup.msg;
  const res = {
    operation: op,
    message_bytes: op === 'sign' || op === 'verify' ? o.messageBytes : null,
    loops: 0,
    warmup_batches: 0,
    samples_ns: [],
    stopped_by: '',
    verified: false,
    error: '',
  };
  const { pk, sk } = setup;
  let call;
  let check; // (last output) -> error string or ''
  if (op === 'keygen') {
    call = () => alg.keygen();
    check = (k) => {
      if (alg.kind === 'kem') {
        const e = alg.encaps(k.pk);
        return equalBytes(alg.decaps(k.sk, e.ct), e.ss) ? '' : 'a new key pair does not round-trip (encaps/decaps)';
      }
      return alg.verify(k.pk, msg, alg.sign(k.sk, msg)) ? '' : 'a new key pair does not round-trip (sign/verify)';
    };
  } else if (op === 'encaps') {
    call = () => alg.encaps(pk);
    check = (r) => (equalBytes(alg.decaps(sk, r.ct), r.ss) ? '' : 'a ciphertext does not decapsulate to its shared secret');
  } else if (op === 'decaps') {
    const { ct, ss } = setup;
    call = () => alg.decaps(sk, ct);
    check = (s) => (equalBytes(s, ss) ? '' : 'decaps gave a shared secret that differs from the expected one');
  } else if (op === 'sign') {
    call = () => alg.sign(sk, msg);
    check = (s) => (alg.verify(pk, msg, s) ? '' : 'a signature does not verify');
  } else {
    const { sig } = setup;
    call = () => alg.verify(pk, msg, sig);
    check = (v) => (v === true ? '' : 'verify returned false');
  }
  const isVerify = op === 'verify';

  // Tamper check before any sample.
  try {
    if (op === 'verify') {
      if (alg.verify(pk, msg, flipFirst(setup.sig)) !== false) {
        res.error = 'verify accepted the signature with its first byte flipped';
        return res;
      }
    } else if (op === 'decaps' && !setup.isDH) {
      if (equalBytes(alg.decaps(sk, flipFirst(setup.ct)), setup.ss)) {
        res.error = 'decaps of the ciphertext with its first byte flipped gave the same shared secret';
        return res;
      }
    }
  } catch (e) {
    res.error = `tamper check threw: ${oneLine(e)}`;
    return res;
  }

  let errors = 0;
  let firstError;
  const count = (b) => {
    errors += b.errors;
    if (firstError === undefined && b.firstError !== undefined) firstError = b.firstError;
  };
  const failed = () => {
    res.error = `${errors} call(s) failed` + (firstError !== undefined ? `: ${oneLine(firstError)}` : isVerify ? ' (verify returned false)' : '');
    return res;
  };

  // Calibrate: double from 1 call until one batch takes at least sample-ns (at most 2^20 calls).
  let loops = 1;
  let warm = 0;
  for (;;) {
    const b = runBatch(call, loops, isVerify);
    warm++;
    count(b);
    if (errors) {
      res.loops = loops;
      res.warmup_batches = warm;
      return failed();
    }
    if (b.ns >= o.sampleNs || loops >= MAX_LOOPS) break;
    loops *= 2;
  }
  for (let i = 0; i < o.warmup; i++) {
    const b = runBatch(call, loops, isVerify);
    warm++;
    count(b);
    if (errors) break;
  }
  res.loops = loops;
  res.warmup_batches = warm;
  if (errors) return failed();

  // Samples.
  const budgetNs = o.budget * 1e9;
  const start = process.hrtime.bigint();
  for (;;) {
    const b = runBatch(call, loops, isVerify);
    count(b);
    if (errors) return failed();
    let why;
    try {
      why = check(b.last);
    } catch (e) {
      why = `check threw: ${oneLine(e)}`;
    }
    if (why) {
      res.error = why;
      return res;
    }
    res.samples_ns.push(b.ns / loops);
    if (res.samples_ns.length >= o.maxSamples) {
      res.stopped_by = 'max_samples';
      break;
    }
    if (res.samples_ns.length >= o.minSamples && Number(process.hrtime.bigint() - start) >= budgetNs) {
      res.stopped_by = 'budget';
      break;
    }
  }
  res.verified = true;
  return res;
}

function cmdTime(argv) {
  const o = parseTimeArgs(argv);
  const { alg } = o;
  const msg = makeMessage(o.messageBytes);
  // Set-up outside the timed region, shared by all operations.
  const { pk, sk } = alg.keygen();
  const setup = { pk, sk, msg, isDH: alg.dh === true };
  let sizes;
  if (alg.kind === 'kem') {
    const { ct, ss } = alg.encaps(pk);
    Object.assign(setup, { ct, ss });
    sizes = { public_key: pk.length, secret_key: sk.length, secret_key_format: alg.skFormat, ciphertext: ct.length, shared_secret: ss.length };
  } else {
    const sig = alg.sign(sk, msg);
    setup.sig = sig;
    sizes = { public_key: pk.length, secret_key: sk.length, secret_key_format: alg.skFormat, signature: sig.length };
  }
  const operations = o.ops.map((op) => timeOperation(o, op, setup));
  const doc = {
    protocol: PROTOCOL,
    program: PROGRAM,
    implementation: IMPL,
    version: VERSION,
    algorithm: o.algName,
    kind: alg.kind,
    clock: 'process.hrtime.bigint (monotonic)',
    sizes,
    operations,
  };
  return { doc, status: operations.every((r) => r.verified && !r.error) ? 0 : 1 };
}

// ---------------------------------------------------------------------------------------------
// serve

const handles = new Map();
let nextHandle = 1;

function handleRequest(req) {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new Error('a request must be a JSON object');
  const { op } = req;
  if (!['keygen', 'encaps', 'decaps', 'sign', 'verify'].includes(op))
    throw new Error(`unknown op ${JSON.stringify(op)}; use keygen, encaps, decaps, sign or verify`);
  checkImpl(req.impl, '"impl"');
  const alg = getAlg(req.alg, '"alg"');
  if (!KIND_OPS[alg.kind].includes(op) && op !== 'keygen')
    throw new Error(`op ${op} does not apply to ${alg.kind} ${req.alg}`);
  const hasSeed = req.seed !== undefined && req.seed !== null;
  const seed = () => {
    if (!hasSeed) return undefined;
    if (!alg.seeded.includes(op)) throw new Error(`${req.alg} does not take a seed for ${op} (seeded: ${alg.seeded.join(', ') || 'none'})`);
    const s = fromHex(req.seed, 'seed');
    const n = alg.seedLen[op];
    if (s.length !== n) throw new Error(`${req.alg} ${op} seed must be ${n} bytes, got ${s.length}`);
    return s;
  };
  const key = () => {
    const h = handles.get(req.handle);
    if (!h) throw new Error(`unknown handle ${JSON.stringify(req.handle)}; make one with keygen`);
    if (h.alg !== req.alg) throw new Error(`handle ${req.handle} is a ${h.alg} key, not ${req.alg}`);
    return h;
  };
  switch (op) {
    case 'keygen': {
      const s = seed();
      const { pk, sk } = s === undefined ? alg.keygen() : alg.keygen(s);
      const handle = `k${nextHandle++}`;
      handles.set(handle, { alg: req.alg, pk, sk });
      return { ok: true, handle, public_key: toHex(pk) };
    }
    case 'encaps': {
      if (alg.kind !== 'kem') throw new Error(`${req.alg} is not a KEM`);
      const pk = fromHex(req.public_key, 'public_key');
      const s = seed();
      const { ct, ss } = s === undefined ? alg.encaps(pk) : alg.encaps(pk, s);
      return { ok: true, ciphertext: toHex(ct), shared_secret: toHex(ss) };
    }
    case 'decaps': {
      if (alg.kind !== 'kem') throw new Error(`${req.alg} is not a KEM`);
      if (hasSeed) throw new Error('decaps takes no seed');
      const { sk } = key();
      return { ok: true, shared_secret: toHex(alg.decaps(sk, fromHex(req.ciphertext, 'ciphertext'))) };
    }
    case 'sign': {
      if (alg.kind !== 'sig') throw new Error(`${req.alg} is not a signature scheme`);
      if (hasSeed) throw new Error('sign takes no seed; use "deterministic": true where `list` shows sign as seeded');
      const det = req.deterministic;
      if (det !== undefined && det !== null) {
        if (typeof det !== 'boolean') throw new Error('"deterministic" must be true or false');
        if (!alg.seeded.includes('sign')) throw new Error(`${req.alg} has no deterministic signing option`);
        if (alg.alwaysDeterministic && det === false) throw new Error(`${req.alg} signing is always deterministic`);
      }
      const { sk } = key();
      const msg = fromHex(req.message, 'message');
      return { ok: true, signature: toHex(alg.sign(sk, msg, det === null ? undefined : det)) };
    }
    case 'verify': {
      if (alg.kind !== 'sig') throw new Error(`${req.alg} is not a signature scheme`);
      const msg = fromHex(req.message, 'message');
      let valid;
      try {
        valid = alg.verify(fromHex(req.public_key, 'public_key'), msg, fromHex(req.signature, 'signature')) === true;
      } catch {
        valid = false; // a malformed key or signature is "valid": false, not an error
      }
      return { ok: true, valid };
    }
  }
  throw new Error('unreachable');
}

function cmdServe() {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  rl.on('line', (line) => {
    if (line.trim() === '') return;
    let answer;
    try {
      answer = handleRequest(JSON.parse(line));
    } catch (e) {
      answer = { ok: false, error: oneLine(e) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  });
}

// ---------------------------------------------------------------------------------------------
// main

function finish(doc, status) {
  process.stdout.write(JSON.stringify(doc) + '\n', () => process.exit(status));
}

function main(argv) {
  const [sub, ...rest] = argv;
  try {
    if (sub === 'list') {
      if (rest.length) throw new BadInput(`list takes no arguments, got ${rest.join(' ')}`);
      return finish(cmdList(), 0);
    }
    if (sub === 'time') {
      const { doc, status } = cmdTime(rest);
      return finish(doc, status);
    }
    if (sub === 'serve') {
      if (rest.length) throw new BadInput(`serve takes no arguments, got ${rest.join(' ')}`);
      return cmdServe();
    }
    throw new BadInput(`unknown subcommand ${JSON.stringify(sub ?? '')}; use list, time or serve`);
  } catch (e) {
    if (e instanceof BadInput) return finish({ error: oneLine(e) }, 2);
    process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
    return finish({ error: `internal error: ${oneLine(e)}` }, 1);
  }
}

main(process.argv.slice(2));
