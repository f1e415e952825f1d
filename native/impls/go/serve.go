package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

type request struct {
	Op            string  `json:"op"`
	Impl          string  `json:"impl"`
	Alg           string  `json:"alg"`
	Seed          *string `json:"seed"`
	PublicKey     *string `json:"public_key"`
	Handle        string  `json:"handle"`
	Ciphertext    *string `json:"ciphertext"`
	Message       *string `json:"message"`
	Signature     *string `json:"signature"`
	Deterministic *bool   `json:"deterministic"`
}

type handleEntry struct {
	alg *alg
	kem kemPriv
	sig sigPriv
}

// kv is an answer whose keys keep their order ("ok" first).
type kv []struct {
	k string
	v any
}

func (a kv) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range a {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(p.k)
		v, err := json.Marshal(p.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteString(": ")
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func answer(pairs ...any) kv {
	out := kv{{"ok", true}}
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, struct {
			k string
			v any
		}{pairs[i].(string), pairs[i+1]})
	}
	return out
}

type server struct {
	handles map[string]handleEntry
	next    int
}

func decodeHex(field string, s *string) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("%q is missing", field)
	}
	b, err := hex.DecodeString(*s)
	if err != nil {
		return nil, fmt.Errorf("%q is not hex: %v", field, err)
	}
	return b, nil
}

func (sv *server) handle(line []byte) (kv, error) {
	var q request
	if err := json.Unmarshal(line, &q); err != nil {
		return nil, fmt.Errorf("the request is not a JSON object of the protocol: %v", err)
	}
	if q.Impl != implID {
		return nil, errors.New(unknownImpl(q.Impl))
	}
	a := findAlg(q.Alg)
	if a == nil {
		return nil, errors.New(unknownAlg(q.Alg))
	}
	needKind := map[string]string{"keygen": "", "encaps": "kem", "decaps": "kem", "sign": "sig", "verify": "sig"}
	kind, ok := needKind[q.Op]
	if !ok {
		msg := fmt.Sprintf("unknown op %q", q.Op)
		if m := closeMatches(q.Op, []string{"keygen", "encaps", "decaps", "sign", "verify"}); len(m) > 0 {
			msg += "; did you mean " + m[0] + "?"
		}
		return nil, errors.New(msg + " (ops: keygen, encaps, decaps, sign, verify)")
	}
	if kind != "" && kind != a.kind {
		return nil, fmt.Errorf("%s is a %s; op %q is for a %s", a.name, a.kind, q.Op, kind)
	}
	if q.Seed != nil && !a.isSeeded(q.Op) {
		return nil, fmt.Errorf("%s %s takes no seed in %s (seeded: %s)", a.name, q.Op, implID, seededText(a))
	}
	if q.Deterministic != nil && *q.Deterministic && !a.isSeeded("sign") {
		return nil, fmt.Errorf("%s has no deterministic signing in %s (seeded: %s)", a.name, implID, seededText(a))
	}
	var seed []byte
	if q.Seed != nil {
		var err error
		if seed, err = decodeHex("seed", q.Seed); err != nil {
			return nil, err
		}
	}
	lookup := func() (handleEntry, error) {
		h, ok := sv.handles[q.Handle]
		if !ok {
			return h, fmt.Errorf("unknown handle %q; make one with keygen", q.Handle)
		}
		if h.alg != a {
			return h, fmt.Errorf("handle %q holds a %s key, not one of %s", q.Handle, h.alg.name, a.name)
		}
		return h, nil
	}
	switch q.Op {
	case "keygen":
		h := handleEntry{alg: a}
		var pub []byte
		var err error
		switch {
		case a.kem != nil && seed != nil:
			h.kem, err = a.kem.fromSeed(seed)
		case a.kem != nil:
			h.kem, err = a.kem.generate()
		case seed != nil:
			h.sig, err = a.sig.fromSeed(seed)
		default:
			h.sig, err = a.sig.generate()
		}
		if err != nil {
			return nil, fmt.Errorf("keygen: %v", err)
		}
		if h.kem != nil {
			pub = h.kem.Public().Bytes()
		} else {
			pub = h.sig.Public().Bytes()
		}
		sv.next++
		name := "k" + strconv.Itoa(sv.next)
		sv.handles[name] = h
		return answer("handle", name, "public_key", hex.EncodeToString(pub)), nil
	case "encaps":
		pk, err := decodeHex("public_key", q.PublicKey)
		if err != nil {
			return nil, err
		}
		pub, err := a.kem.parsePub(pk)
		if err != nil {
			return nil, fmt.Errorf("encaps: bad %s public key (%d bytes): %v", a.name, len(pk), err)
		}
		var ss, ct []byte
		if seed != nil {
			ss, ct, err = pub.EncapsSeeded(seed)
		} else {
			ss, ct, err = pub.Encaps()
		}
		if err != nil {
			return nil, fmt.Errorf("encaps: %v", err)
		}
		return answer("ciphertext", hex.EncodeToString(ct), "shared_secret", hex.EncodeToString(ss)), nil
	case "decaps":
		h, err := lookup()
		if err != nil {
			return nil, err
		}
		ct, err := decodeHex("ciphertext", q.Ciphertext)
		if err != nil {
			return nil, err
		}
		ss, err := h.kem.Decaps(ct)
		if err != nil {
			return nil, fmt.Errorf("decaps: bad %s ciphertext (%d bytes): %v", a.name, len(ct), err)
		}
		return answer("shared_secret", hex.EncodeToString(ss)), nil
	case "sign":
		h, err := lookup()
		if err != nil {
			return nil, err
		}
		msg, err := decodeHex("message", q.Message)
		if err != nil {
			return nil, err
		}
		sig, err := h.sig.Sign(msg)
		if err != nil {
			return nil, fmt.Errorf("sign: %v", err)
		}
		return answer("signature", hex.EncodeToString(sig)), nil
	default: // verify
		msg, err := decodeHex("message", q.Message)
		if err != nil {
			return nil, err
		}
		pk, err := decodeHex("public_key", q.PublicKey)
		if err != nil {
			return nil, err
		}
		sig, err := decodeHex("signature", q.Signature)
		if err != nil {
			return nil, err
		}
		pub, err := a.sig.parsePub(pk)
		if err != nil {
			return answer("valid", false), nil // a malformed key is not valid, not an error
		}
		return answer("valid", pub.Verify(msg, sig)), nil
	}
}

func seededText(a *alg) string {
	if len(a.seeded()) == 0 {
		return "none"
	}
	return strings.Join(a.seeded(), ", ")
}

func cmdServe() {
	sv := &server{handles: map[string]handleEntry{}}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			ans, herr := sv.handle(line)
			if herr != nil {
				ans = kv{{"ok", false}, {"error", strings.ReplaceAll(herr.Error(), "\n", " ")}}
			}
			if eerr := enc.Encode(ans); eerr != nil {
				fmt.Fprintln(os.Stderr, "impls-go: writing an answer:", eerr)
				os.Exit(1)
			}
			out.Flush()
		}
		if err != nil {
			break
		}
	}
}
