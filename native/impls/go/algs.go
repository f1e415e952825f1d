package main

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/mlkem"
	"crypto/mlkem/mlkemtest"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
)

// ---- KEMs ------------------------------------------------------------------------------------------------

type kemPriv interface {
	Public() kemPub
	Decaps(ct []byte) ([]byte, error)
	SecretBytes() []byte
}

type kemPub interface {
	Bytes() []byte
	Encaps() (ss, ct []byte, err error)
	EncapsSeeded(m []byte) (ss, ct []byte, err error)
}

type kemScheme struct {
	name     string
	seeded   []string
	skFormat string
	isDH     bool // Diffie-Hellman as a KEM: no tamper check
	generate func() (kemPriv, error)
	fromSeed func(seed []byte) (kemPriv, error) // nil: no seeded keygen
	parsePub func(b []byte) (kemPub, error)
}

// ML-KEM-768 and ML-KEM-1024: crypto/mlkem gives each parameter set its own key types with the same methods, so one
// generic pair of types wraps both; mlkemScheme takes the set's functions.

// mlkemDK is crypto/mlkem's decapsulation key of the parameter set whose encapsulation key is EK.
type mlkemDK[EK any] interface {
	EncapsulationKey() EK
	Decapsulate(ct []byte) ([]byte, error)
	Bytes() []byte
}

// mlkemEK is crypto/mlkem's encapsulation key of a parameter set.
type mlkemEK interface {
	Bytes() []byte
	Encapsulate() (ss, ct []byte)
}

// mlkemEncapsSeeded is mlkemtest's encapsulation with caller randomness m (Encapsulate768, Encapsulate1024).
type mlkemEncapsSeeded[EK mlkemEK] func(ek EK, m []byte) (ss, ct []byte, err error)

type mlkemPriv[DK mlkemDK[EK], EK mlkemEK] struct {
	dk           DK
	encapsSeeded mlkemEncapsSeeded[EK]
}
type mlkemPub[EK mlkemEK] struct {
	ek           EK
	encapsSeeded mlkemEncapsSeeded[EK]
}

func (k mlkemPriv[DK, EK]) Public() kemPub {
	return mlkemPub[EK]{k.dk.EncapsulationKey(), k.encapsSeeded}
}
func (k mlkemPriv[DK, EK]) Decaps(ct []byte) ([]byte, error) { return k.dk.Decapsulate(ct) }
func (k mlkemPriv[DK, EK]) SecretBytes() []byte              { return k.dk.Bytes() }
func (p mlkemPub[EK]) Bytes() []byte                         { return p.ek.Bytes() }
func (p mlkemPub[EK]) Encaps() ([]byte, []byte, error) {
	ss, ct := p.ek.Encapsulate()
	return ss, ct, nil
}
func (p mlkemPub[EK]) EncapsSeeded(m []byte) ([]byte, []byte, error) {
	return p.encapsSeeded(p.ek, m)
}

// mlkemScheme is one parameter set of crypto/mlkem: its key generation, its decapsulation key from a seed, its
// encapsulation key from bytes and mlkemtest's seeded encapsulation.
func mlkemScheme[DK mlkemDK[EK], EK mlkemEK](name string, generate func() (DK, error), fromSeed func(seed []byte) (DK, error),
	parsePub func(b []byte) (EK, error), encapsSeeded mlkemEncapsSeeded[EK]) *kemScheme {
	return &kemScheme{
		name: name, seeded: []string{"keygen", "encaps"}, skFormat: "seed",
		generate: func() (kemPriv, error) {
			dk, err := generate()
			if err != nil {
				return nil, err
			}
			return mlkemPriv[DK, EK]{dk, encapsSeeded}, nil
		},
		fromSeed: func(seed []byte) (kemPriv, error) {
			dk, err := fromSeed(seed)
			if err != nil {
				return nil, err
			}
			return mlkemPriv[DK, EK]{dk, encapsSeeded}, nil
		},
		parsePub: func(b []byte) (kemPub, error) {
			ek, err := parsePub(b)
			if err != nil {
				return nil, err
			}
			return mlkemPub[EK]{ek, encapsSeeded}, nil
		},
	}
}

// Diffie-Hellman as a KEM (crypto/ecdh): X25519, ECDH-P256

type dhPriv struct{ k *ecdh.PrivateKey }
type dhPub struct{ p *ecdh.PublicKey }

func (k dhPriv) Public() kemPub { return dhPub{k.k.PublicKey()} }
func (k dhPriv) Decaps(ct []byte) ([]byte, error) {
	peer, err := k.k.Curve().NewPublicKey(ct)
	if err != nil {
		return nil, err
	}
	return k.k.ECDH(peer)
}
func (k dhPriv) SecretBytes() []byte { return k.k.Bytes() }
func (p dhPub) Bytes() []byte        { return p.p.Bytes() }
func (p dhPub) Encaps() ([]byte, []byte, error) {
	eph, err := p.p.Curve().GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ss, err := eph.ECDH(p.p)
	if err != nil {
		return nil, nil, err
	}
	return ss, eph.PublicKey().Bytes(), nil
}
func (p dhPub) EncapsSeeded([]byte) ([]byte, []byte, error) {
	return nil, nil, errors.New("no seeded encaps")
}

func dhScheme(name string, curve ecdh.Curve, skFormat string) *kemScheme {
	return &kemScheme{
		name: name, seeded: []string{}, skFormat: skFormat, isDH: true,
		generate: func() (kemPriv, error) {
			k, err := curve.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			return dhPriv{k}, nil
		},
		parsePub: func(b []byte) (kemPub, error) {
			p, err := curve.NewPublicKey(b)
			if err != nil {
				return nil, err
			}
			return dhPub{p}, nil
		},
	}
}

// ---- Signatures ------------------------------------------------------------------------------------------

type sigPriv interface {
	Public() sigPub
	Sign(msg []byte) ([]byte, error)
	SecretBytes() []byte
}

type sigPub interface {
	Bytes() []byte
	Verify(msg, sig []byte) bool
}

type sigScheme struct {
	name     string
	seeded   []string
	skFormat string
	generate func() (sigPriv, error)
	fromSeed func(seed []byte) (sigPriv, error)
	parsePub func(b []byte) (sigPub, error) // a malformed key is an error here, "valid": false in serve
}

// Ed25519 (always deterministic)

type ed25519Priv struct{ k ed25519.PrivateKey }
type ed25519Pub struct{ p ed25519.PublicKey }

func (k ed25519Priv) Public() sigPub                  { return ed25519Pub{k.k.Public().(ed25519.PublicKey)} }
func (k ed25519Priv) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(k.k, msg), nil }
func (k ed25519Priv) SecretBytes() []byte             { return k.k.Seed() }
func (p ed25519Pub) Bytes() []byte                    { return []byte(p.p) }
func (p ed25519Pub) Verify(msg, sig []byte) bool      { return ed25519.Verify(p.p, msg, sig) }

// ECDSA-P256 over SHA-256 of the message, DER signatures, randomized (hedged) signing

type ecdsaPriv struct{ k *ecdsa.PrivateKey }
type ecdsaPub struct{ p *ecdsa.PublicKey }

func (k ecdsaPriv) Public() sigPub { return ecdsaPub{&k.k.PublicKey} }
func (k ecdsaPriv) Sign(msg []byte) ([]byte, error) {
	h := sha256.Sum256(msg)
	return ecdsa.SignASN1(rand.Reader, k.k, h[:])
}
func (k ecdsaPriv) SecretBytes() []byte {
	b, err := k.k.Bytes()
	if err != nil {
		return nil
	}
	return b
}
func (p ecdsaPub) Bytes() []byte {
	b, err := p.p.Bytes()
	if err != nil {
		return nil
	}
	return b
}
func (p ecdsaPub) Verify(msg, sig []byte) bool {
	h := sha256.Sum256(msg)
	return ecdsa.VerifyASN1(p.p, h[:], sig)
}

// RSA PKCS #1 v1.5 with SHA-256, e = 65537 (deterministic by construction)

type rsaPriv struct{ k *rsa.PrivateKey }
type rsaPub struct{ p *rsa.PublicKey }

func (k rsaPriv) Public() sigPub { return rsaPub{&k.k.PublicKey} }
func (k rsaPriv) Sign(msg []byte) ([]byte, error) {
	h := sha256.Sum256(msg)
	return rsa.SignPKCS1v15(nil, k.k, crypto.SHA256, h[:])
}
func (k rsaPriv) SecretBytes() []byte {
	b, err := x509.MarshalPKCS8PrivateKey(k.k)
	if err != nil {
		return nil
	}
	return b
}
func (p rsaPub) Bytes() []byte {
	b, err := x509.MarshalPKIXPublicKey(p.p)
	if err != nil {
		return nil
	}
	return b
}
func (p rsaPub) Verify(msg, sig []byte) bool {
	h := sha256.Sum256(msg)
	return rsa.VerifyPKCS1v15(p.p, crypto.SHA256, h[:], sig) == nil
}

func rsaScheme(name string, bits int) *sigScheme {
	return &sigScheme{
		name: name, seeded: []string{"sign"}, skFormat: "PKCS#8 DER",
		generate: func() (sigPriv, error) {
			k, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				return nil, err
			}
			return rsaPriv{k}, nil
		},
		parsePub: func(b []byte) (sigPub, error) {
			k, err := x509.ParsePKIXPublicKey(b)
			if err != nil {
				return nil, err
			}
			p, ok := k.(*rsa.PublicKey)
			if !ok {
				return nil, fmt.Errorf("not an RSA public key but %T", k)
			}
			if p.N.BitLen() != bits {
				return nil, fmt.Errorf("an RSA-%d key, not RSA-%d", p.N.BitLen(), bits)
			}
			return rsaPub{p}, nil
		},
	}
}

// ---- The table -------------------------------------------------------------------------------------------

type alg struct {
	name string
	kind string // "kem" or "sig"
	kem  *kemScheme
	sig  *sigScheme
}

func (a *alg) seeded() []string {
	if a.kem != nil {
		return a.kem.seeded
	}
	return a.sig.seeded
}

func (a *alg) isSeeded(op string) bool {
	for _, s := range a.seeded() {
		if s == op {
			return true
		}
	}
	return false
}

func (a *alg) ops() []string {
	if a.kind == "kem" {
		return []string{"keygen", "encaps", "decaps"}
	}
	return []string{"keygen", "sign", "verify"}
}

var algorithms = []*alg{
	{name: "ML-KEM-768", kind: "kem", kem: mlkemScheme("ML-KEM-768", mlkem.GenerateKey768, mlkem.NewDecapsulationKey768,
		mlkem.NewEncapsulationKey768, mlkemtest.Encapsulate768)},
	{name: "ML-KEM-1024", kind: "kem", kem: mlkemScheme("ML-KEM-1024", mlkem.GenerateKey1024, mlkem.NewDecapsulationKey1024,
		mlkem.NewEncapsulationKey1024, mlkemtest.Encapsulate1024)},
	{name: "X25519", kind: "kem", kem: dhScheme("X25519", ecdh.X25519(), "raw")},
	{name: "ECDH-P256", kind: "kem", kem: dhScheme("ECDH-P256", ecdh.P256(), "raw scalar")},
	{name: "Ed25519", kind: "sig", sig: &sigScheme{
		name: "Ed25519", seeded: []string{"keygen", "sign"}, skFormat: "seed",
		generate: func() (sigPriv, error) {
			_, k, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			return ed25519Priv{k}, nil
		},
		fromSeed: func(seed []byte) (sigPriv, error) {
			if len(seed) != ed25519.SeedSize {
				return nil, fmt.Errorf("an Ed25519 seed is %d bytes, not %d", ed25519.SeedSize, len(seed))
			}
			return ed25519Priv{ed25519.NewKeyFromSeed(seed)}, nil
		},
		parsePub: func(b []byte) (sigPub, error) {
			if len(b) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("an Ed25519 public key is %d bytes, not %d", ed25519.PublicKeySize, len(b))
			}
			return ed25519Pub{ed25519.PublicKey(append([]byte(nil), b...))}, nil
		},
	}},
	{name: "ECDSA-P256", kind: "sig", sig: &sigScheme{
		name: "ECDSA-P256", seeded: []string{}, skFormat: "raw scalar",
		generate: func() (sigPriv, error) {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				return nil, err
			}
			return ecdsaPriv{k}, nil
		},
		parsePub: func(b []byte) (sigPub, error) {
			p, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b)
			if err != nil {
				return nil, err
			}
			return ecdsaPub{p}, nil
		},
	}},
	{name: "RSA-2048-PKCS1v15-sig", kind: "sig", sig: rsaScheme("RSA-2048-PKCS1v15-sig", 2048)},
	{name: "RSA-3072-PKCS1v15-sig", kind: "sig", sig: rsaScheme("RSA-3072-PKCS1v15-sig", 3072)},
}

// Protocol names Go 1.26's standard library does not have, so that an error can say so.
var missing = map[string]string{
	"ML-KEM-512": "crypto/mlkem has only ML-KEM-768 and ML-KEM-1024",
	"ML-DSA-44":  "no crypto/mldsa package; ML-DSA exists only as the unexported crypto/internal/fips140/mldsa",
	"ML-DSA-65":  "no crypto/mldsa package; ML-DSA exists only as the unexported crypto/internal/fips140/mldsa",
	"ML-DSA-87":  "no crypto/mldsa package; ML-DSA exists only as the unexported crypto/internal/fips140/mldsa",
}

func findAlg(name string) *alg {
	for _, a := range algorithms {
		if a.name == name {
			return a
		}
	}
	return nil
}
