package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"time"
)

type timeCfg struct {
	impl, alg, ops string
	budget         float64
	minSamples     int
	maxSamples     int
	warmup         int
	sampleNs       int64
	messageBytes   int
}

const maxLoops = 1 << 20

type opResult struct {
	Operation     string    `json:"operation"`
	MessageBytes  *int      `json:"message_bytes"`
	Loops         int       `json:"loops"`
	WarmupBatches int       `json:"warmup_batches"`
	SamplesNs     []float64 `json:"samples_ns"`
	StoppedBy     string    `json:"stopped_by"`
	Verified      bool      `json:"verified"`
	Error         string    `json:"error"`
}

type kemSizes struct {
	PublicKey       int    `json:"public_key"`
	SecretKey       int    `json:"secret_key"`
	SecretKeyFormat string `json:"secret_key_format"`
	Ciphertext      int    `json:"ciphertext"`
	SharedSecret    int    `json:"shared_secret"`
}

type sigSizes struct {
	PublicKey       int    `json:"public_key"`
	SecretKey       int    `json:"secret_key"`
	SecretKeyFormat string `json:"secret_key_format"`
	Signature       int    `json:"signature"`
}

type timeDoc struct {
	Protocol       int        `json:"protocol"`
	Program        string     `json:"program"`
	Implementation string     `json:"implementation"`
	Version        string     `json:"version"`
	Algorithm      string     `json:"algorithm"`
	Kind           string     `json:"kind"`
	Clock          string     `json:"clock"`
	Sizes          any        `json:"sizes"`
	Operations     []opResult `json:"operations"`
}

// message returns the protocol's test message: byte i = (31 i + 7) mod 256.
func message(n int) []byte {
	m := make([]byte, n)
	for i := range m {
		m[i] = byte((31*i + 7) % 256)
	}
	return m
}

func flipped(b []byte) []byte {
	c := bytes.Clone(b)
	if len(c) > 0 {
		c[0] ^= 1
	}
	return c
}

func parseTimeArgs(args []string) (*timeCfg, *alg) {
	fs := flag.NewFlagSet("time", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &timeCfg{}
	fs.StringVar(&c.impl, "impl", "", "")
	fs.StringVar(&c.alg, "alg", "", "")
	fs.StringVar(&c.ops, "ops", "", "")
	fs.Float64Var(&c.budget, "budget", 1, "")
	fs.IntVar(&c.minSamples, "min-samples", 5, "")
	fs.IntVar(&c.maxSamples, "max-samples", 10000, "")
	fs.IntVar(&c.warmup, "warmup", 2, "")
	fs.Int64Var(&c.sampleNs, "sample-ns", 1_000_000, "")
	fs.IntVar(&c.messageBytes, "message-bytes", 32, "")
	if err := fs.Parse(args); err != nil {
		badInput("time: %v; %s", err, usage())
	}
	if fs.NArg() > 0 {
		badInput("time: unexpected argument %q; %s", fs.Arg(0), usage())
	}
	switch {
	case c.impl == "":
		badInput("time: --impl is missing; give --impl %s", implID)
	case c.impl != implID:
		badInput("time: --impl: %s", unknownImpl(c.impl))
	case c.alg == "":
		badInput("time: --alg is missing; give one of %s", strings.Join(algNames(), ", "))
	}
	a := findAlg(c.alg)
	if a == nil {
		badInput("time: --alg: %s", unknownAlg(c.alg))
	}
	switch {
	case math.IsNaN(c.budget) || math.IsInf(c.budget, 0) || c.budget < 0:
		badInput("time: --budget %v is not a finite number of seconds >= 0; give e.g. --budget 0.5", c.budget)
	case c.minSamples < 1:
		badInput("time: --min-samples %d is below 1; give a count >= 1", c.minSamples)
	case c.maxSamples < c.minSamples:
		badInput("time: --max-samples %d is below --min-samples %d; give --max-samples >= --min-samples",
			c.maxSamples, c.minSamples)
	case c.warmup < 0:
		badInput("time: --warmup %d is negative; give a count >= 0", c.warmup)
	case c.sampleNs < 0:
		badInput("time: --sample-ns %d is negative; give nanoseconds >= 0", c.sampleNs)
	case c.messageBytes < 0 || c.messageBytes > 1<<30:
		badInput("time: --message-bytes %d is out of range; give 0 to 1073741824", c.messageBytes)
	}
	if c.ops == "" {
		c.ops = strings.Join(a.ops(), ",")
	}
	for _, op := range strings.Split(c.ops, ",") {
		ok := false
		for _, o := range a.ops() {
			ok = ok || o == op
		}
		if !ok {
			badInput("time: --ops: %q is not an operation of %s (a %s); give a comma-separated list of %s",
				op, a.name, a.kind, strings.Join(a.ops(), ","))
		}
	}
	return c, a
}

// measure runs the protocol's loop for one operation: calibration by doubling, warm-up, then samples.
// batch makes n calls and returns how many returned an error; check looks at the batch's last output.
// Both run outside the clock reads except the n calls themselves.
func measure(c *timeCfg, r *opResult, batch func(n int) (int, error), check func() error) {
	run := func(loops int) (time.Duration, error) {
		t0 := time.Now()
		errs, first := batch(loops)
		d := time.Since(t0)
		if errs > 0 {
			return d, fmt.Errorf("%d of %d calls in a batch failed: %v", errs, loops, first)
		}
		return d, check()
	}
	fail := func(err error) {
		r.Verified, r.Error, r.StoppedBy = false, err.Error(), "error"
	}
	runtime.GC()
	loops := 1
	for {
		d, err := run(loops)
		r.WarmupBatches++
		if err != nil {
			r.Loops = loops
			fail(err)
			return
		}
		if d.Nanoseconds() >= c.sampleNs || loops >= maxLoops {
			break
		}
		loops *= 2
	}
	r.Loops = loops
	for i := 0; i < c.warmup; i++ {
		_, err := run(loops)
		r.WarmupBatches++
		if err != nil {
			fail(err)
			return
		}
	}
	runtime.GC()
	budget := time.Duration(c.budget * 1e9)
	start := time.Now()
	r.StoppedBy = "max-samples"
	for len(r.SamplesNs) < c.maxSamples {
		if len(r.SamplesNs) >= c.minSamples && time.Since(start) >= budget {
			r.StoppedBy = "budget"
			break
		}
		d, err := run(loops)
		if err != nil {
			fail(err)
			return
		}
		r.SamplesNs = append(r.SamplesNs, float64(d.Nanoseconds())/float64(loops))
	}
	r.Verified = true
}

// timeKeygen measures keygen of either kind: batches of generate calls, the last key of each batch checked by check
// (a round trip of the new key pair).
func timeKeygen[K any](c *timeCfg, r *opResult, generate func() (K, error), check func(last K) error) {
	var last, none K
	measure(c, r, func(n int) (int, error) {
		errs, first := 0, error(nil)
		last = none
		for i := 0; i < n; i++ {
			k, err := generate()
			if err != nil {
				errs, first = errs+1, cmp(first, err)
			}
			last = k
		}
		return errs, first
	}, func() error { return check(last) })
}

// ---- KEM -------------------------------------------------------------------------------------------------

// kemRoundTrip checks a key pair: its public key survives encoding, and encaps/decaps agree.
func kemRoundTrip(s *kemScheme, k kemPriv) error {
	if k == nil {
		return errors.New("keygen gave no key")
	}
	pub, err := s.parsePub(k.Public().Bytes())
	if err != nil {
		return fmt.Errorf("the new public key does not parse: %v", err)
	}
	ss, ct, err := pub.Encaps()
	if err != nil {
		return fmt.Errorf("encaps to the new key: %v", err)
	}
	got, err := k.Decaps(ct)
	if err != nil {
		return fmt.Errorf("decaps with the new key: %v", err)
	}
	if len(ss) == 0 || !bytes.Equal(got, ss) {
		return errors.New("the new key pair does not round-trip: decaps gives another shared secret")
	}
	return nil
}

type kemSetup struct {
	priv    kemPriv
	pub     kemPub
	ss, ct  []byte
	skBytes []byte
}

func setupKEM(s *kemScheme) (*kemSetup, error) {
	priv, err := s.generate()
	if err != nil {
		return nil, fmt.Errorf("setup keygen: %v", err)
	}
	if err := kemRoundTrip(s, priv); err != nil {
		return nil, fmt.Errorf("setup: %v", err)
	}
	pub, _ := s.parsePub(priv.Public().Bytes())
	ss, ct, err := pub.Encaps()
	if err != nil {
		return nil, fmt.Errorf("setup encaps: %v", err)
	}
	got, err := priv.Decaps(ct)
	if err != nil || !bytes.Equal(got, ss) {
		return nil, fmt.Errorf("setup: the ciphertext does not decapsulate to its shared secret (%v)", err)
	}
	if !s.isDH {
		bad, err := priv.Decaps(flipped(ct))
		if err != nil {
			return nil, fmt.Errorf("tamper check: decaps of a flipped ciphertext returned an error (%v), not an implicit-rejection secret", err)
		}
		if bytes.Equal(bad, ss) {
			return nil, errors.New("tamper check: decaps of the ciphertext with its first byte flipped gives the same shared secret")
		}
	}
	return &kemSetup{priv: priv, pub: pub, ss: ss, ct: ct, skBytes: priv.SecretBytes()}, nil
}

func timeKEM(c *timeCfg, s *kemScheme, op string) opResult {
	r := opResult{Operation: op, SamplesNs: []float64{}}
	st, err := setupKEM(s)
	if err != nil {
		r.Error, r.StoppedBy = err.Error(), "error"
		return r
	}
	switch op {
	case "keygen":
		timeKeygen(c, &r, s.generate, func(last kemPriv) error { return kemRoundTrip(s, last) })
	case "encaps":
		var lastSS, lastCT []byte
		pub := st.pub
		measure(c, &r, func(n int) (int, error) {
			errs, first := 0, error(nil)
			lastSS, lastCT = nil, nil
			for i := 0; i < n; i++ {
				ss, ct, err := pub.Encaps()
				if err != nil {
					errs, first = errs+1, cmp(first, err)
				}
				lastSS, lastCT = ss, ct
			}
			return errs, first
		}, func() error {
			got, err := st.priv.Decaps(lastCT)
			if err != nil {
				return fmt.Errorf("the last ciphertext of a batch does not decapsulate: %v", err)
			}
			if len(lastSS) != len(st.ss) || !bytes.Equal(got, lastSS) {
				return errors.New("the last ciphertext of a batch decapsulates to another shared secret")
			}
			return nil
		})
	case "decaps":
		var lastSS []byte
		priv, ct := st.priv, st.ct
		measure(c, &r, func(n int) (int, error) {
			errs, first := 0, error(nil)
			lastSS = nil
			for i := 0; i < n; i++ {
				ss, err := priv.Decaps(ct)
				if err != nil {
					errs, first = errs+1, cmp(first, err)
				}
				lastSS = ss
			}
			return errs, first
		}, func() error {
			if !bytes.Equal(lastSS, st.ss) {
				return errors.New("the last decaps of a batch gave another shared secret than the expected one")
			}
			return nil
		})
	}
	return r
}

// ---- signatures ------------------------------------------------------------------------------------------

func sigRoundTrip(s *sigScheme, k sigPriv, msg []byte) error {
	if k == nil {
		return errors.New("keygen gave no key")
	}
	pub, err := s.parsePub(k.Public().Bytes())
	if err != nil {
		return fmt.Errorf("the new public key does not parse: %v", err)
	}
	sig, err := k.Sign(msg)
	if err != nil {
		return fmt.Errorf("sign with the new key: %v", err)
	}
	if !pub.Verify(msg, sig) {
		return errors.New("the new key pair does not round-trip: its signature does not verify")
	}
	return nil
}

type sigSetup struct {
	priv    sigPriv
	pub     sigPub
	sig     []byte
	skBytes []byte
}

func setupSig(s *sigScheme, msg []byte) (*sigSetup, error) {
	priv, err := s.generate()
	if err != nil {
		return nil, fmt.Errorf("setup keygen: %v", err)
	}
	if err := sigRoundTrip(s, priv, msg); err != nil {
		return nil, fmt.Errorf("setup: %v", err)
	}
	pub, _ := s.parsePub(priv.Public().Bytes())
	sig, err := priv.Sign(msg)
	if err != nil {
		return nil, fmt.Errorf("setup sign: %v", err)
	}
	if !pub.Verify(msg, sig) {
		return nil, errors.New("setup: the signature does not verify")
	}
	if pub.Verify(msg, flipped(sig)) {
		return nil, errors.New("tamper check: the signature with its first byte flipped verifies")
	}
	return &sigSetup{priv: priv, pub: pub, sig: sig, skBytes: priv.SecretBytes()}, nil
}

func timeSig(c *timeCfg, s *sigScheme, op string, msg []byte) opResult {
	r := opResult{Operation: op, SamplesNs: []float64{}}
	if op != "keygen" {
		mb := len(msg)
		r.MessageBytes = &mb
	}
	st, err := setupSig(s, msg)
	if err != nil {
		r.Error, r.StoppedBy = err.Error(), "error"
		return r
	}
	switch op {
	case "keygen":
		timeKeygen(c, &r, s.generate, func(last sigPriv) error { return sigRoundTrip(s, last, msg) })
	case "sign":
		var last []byte
		priv := st.priv
		measure(c, &r, func(n int) (int, error) {
			errs, first := 0, error(nil)
			last = nil
			for i := 0; i < n; i++ {
				sig, err := priv.Sign(msg)
				if err != nil {
					errs, first = errs+1, cmp(first, err)
				}
				last = sig
			}
			return errs, first
		}, func() error {
			if !st.pub.Verify(msg, last) {
				return errors.New("the last signature of a batch does not verify")
			}
			return nil
		})
	case "verify":
		last := false
		pub, sig := st.pub, st.sig
		measure(c, &r, func(n int) (int, error) {
			errs, first := 0, error(nil)
			last = false
			for i := 0; i < n; i++ {
				ok := pub.Verify(msg, sig)
				if !ok {
					errs, first = errs+1, cmp(first, errors.New("verify returned false"))
				}
				last = ok
			}
			return errs, first
		}, func() error {
			if !last {
				return errors.New("the last verify of a batch returned false")
			}
			return nil
		})
	}
	return r
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// ---- the command -----------------------------------------------------------------------------------------

func cmdTime(args []string) int {
	c, a := parseTimeArgs(args)
	msg := message(c.messageBytes)
	doc := timeDoc{Protocol: protocolVersion, Program: programName, Implementation: implID, Version: goVersion(),
		Algorithm: a.name, Kind: a.kind, Clock: "time.Now (monotonic)", Operations: []opResult{}}
	status := 0
	if a.kem != nil {
		if st, err := setupKEM(a.kem); err == nil {
			doc.Sizes = kemSizes{len(st.pub.Bytes()), len(st.skBytes), a.kem.skFormat, len(st.ct), len(st.ss)}
		} else {
			doc.Sizes = map[string]any{}
		}
	} else {
		if st, err := setupSig(a.sig, msg); err == nil {
			doc.Sizes = sigSizes{len(st.pub.Bytes()), len(st.skBytes), a.sig.skFormat, len(st.sig)}
		} else {
			doc.Sizes = map[string]any{}
		}
	}
	for _, op := range strings.Split(c.ops, ",") {
		var r opResult
		if a.kem != nil {
			r = timeKEM(c, a.kem, op)
		} else {
			r = timeSig(c, a.sig, op, msg)
		}
		if !r.Verified {
			status = 1
		}
		doc.Operations = append(doc.Operations, r)
	}
	writeJSON(doc)
	return status
}
