// Command impls-go measures the public-key algorithms of Go's standard library in Go's own loop and speaks
// pqlab's program protocol (version 2, native/PROTOCOL.md): `list`, `time ...`, `serve`.
package main

import (
	"bufio"
	"crypto/fips140"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
)

const (
	protocolVersion = 2
	programName     = "go" // its name in pqlab.runners.program.REGISTRY
	language        = "Go"
	implID          = "go-stdlib"
	packageName     = "Go standard library"
)

// commands is what it answers besides `list` (program.toml's `commands`).
var commands = []string{"time", "serve"}

// goVersion is the toolchain that built this binary (its standard library is the one measured).
func goVersion() string { return strings.TrimPrefix(strings.Fields(runtime.Version())[0], "go") }

func provenance() string { return "https://pkg.go.dev/crypto@" + strings.Fields(runtime.Version())[0] }

func options() string {
	parts := []string{"GOARCH=" + runtime.GOARCH}
	purego := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "GOAMD64", "GOARM64", "GOARM", "GO386", "GOEXPERIMENT", "GOFIPS140":
				parts = append(parts, s.Key+"="+s.Value)
			case "-tags":
				parts = append(parts, "tags="+s.Value)
				for _, t := range strings.Split(s.Value, ",") {
					purego = purego || t == "purego"
				}
			}
		}
	}
	s := strings.Join(parts, " ")
	s += fmt.Sprintf("; FIPS 140-3 module %s, FIPS mode %s", fips140.Version(),
		map[bool]string{true: "on", false: "off"}[fips140.Enabled()])
	if a := archOptions(purego); a != "" {
		s += "; " + a
	}
	if d := os.Getenv("GODEBUG"); strings.Contains(d, "cpu.") {
		s += "; GODEBUG=" + d
	}
	return s
}

// ---- output ----------------------------------------------------------------------------------------------

func writeJSON(v any) {
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(os.Stderr, "impls-go: writing JSON:", err)
		os.Exit(1)
	}
	w.Flush()
}

// badInput ends the program with exit status 2 and {"error": msg}.
func badInput(format string, a ...any) {
	writeJSON(map[string]string{"error": strings.ReplaceAll(fmt.Sprintf(format, a...), "\n", " ")})
	os.Exit(2)
}

// ---- close matches ---------------------------------------------------------------------------------------

func normalize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// closeMatches returns the candidates near name (case and punctuation ignored), nearest first.
func closeMatches(name string, candidates []string) []string {
	n := normalize(name)
	type scored struct {
		s string
		d int
	}
	var out []scored
	for _, c := range candidates {
		cn := normalize(c)
		d := levenshtein(n, cn)
		if d <= max(2, len(cn)/4) || (len(n) >= 3 && strings.Contains(cn, n)) || (len(cn) >= 3 && strings.Contains(n, cn)) {
			out = append(out, scored{c, d})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d })
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = s.s
	}
	return names
}

func algNames() []string {
	names := make([]string, len(algorithms))
	for i, a := range algorithms {
		names[i] = a.name
	}
	return names
}

// unknownAlg explains an algorithm name this program does not have (one line).
func unknownAlg(name string) string {
	if why, ok := missing[name]; ok {
		return fmt.Sprintf("%s is not in Go %s's standard library (%s); %s has %s", name, goVersion(), why, implID,
			strings.Join(algNames(), ", "))
	}
	if strings.HasPrefix(name, "SLH-DSA") {
		return fmt.Sprintf("%s is not in Go %s's standard library (no SLH-DSA package); %s has %s", name,
			goVersion(), implID, strings.Join(algNames(), ", "))
	}
	msg := fmt.Sprintf("unknown algorithm %q", name)
	if m := closeMatches(name, algNames()); len(m) > 0 {
		msg += "; did you mean " + strings.Join(m, " or ") + "?"
	}
	return msg + fmt.Sprintf(" (%s has %s; names are exact, as in native/PROTOCOL.md)", implID, strings.Join(algNames(), ", "))
}

func unknownImpl(name string) string {
	msg := fmt.Sprintf("unknown implementation %q", name)
	if m := closeMatches(name, []string{implID}); len(m) > 0 {
		msg += "; did you mean " + m[0] + "?"
	}
	return msg + fmt.Sprintf(" (this program, the Go runner, has only %s)", implID)
}

// ---- list ------------------------------------------------------------------------------------------------

type listImpl struct {
	Implementation string `json:"implementation"`
	Version        string `json:"version"`
	Package        string `json:"package"`
	Provenance     string `json:"provenance"`
	Options        string `json:"options"`
}

type listAlg struct {
	Implementation string   `json:"implementation"`
	Algorithm      string   `json:"algorithm"`
	Kind           string   `json:"kind"`
	Seeded         []string `json:"seeded"`
}

type listDoc struct {
	Protocol        int        `json:"protocol"`
	Program         string     `json:"program"`
	Language        string     `json:"language"`
	Toolchain       string     `json:"toolchain"`
	Commands        []string   `json:"commands"`
	Implementations []listImpl `json:"implementations"`
	Algorithms      []listAlg  `json:"algorithms"`
}

func cmdList() {
	doc := listDoc{Protocol: protocolVersion, Program: programName, Language: language, Toolchain: runtime.Version(),
		Commands:        commands,
		Implementations: []listImpl{{implID, goVersion(), packageName, provenance(), options()}}}
	for _, a := range algorithms {
		doc.Algorithms = append(doc.Algorithms, listAlg{implID, a.name, a.kind, a.seeded()})
	}
	writeJSON(doc)
}

func usage() string {
	return "usage: impls-go list | impls-go time --impl go-stdlib --alg NAME --ops keygen,... --budget SECONDS " +
		"--min-samples N --max-samples N --warmup N --sample-ns NS --message-bytes N | impls-go serve"
}

func main() {
	if len(os.Args) < 2 {
		badInput("no subcommand; %s", usage())
	}
	switch os.Args[1] {
	case "list":
		if len(os.Args) > 2 {
			badInput("list takes no arguments, got %q; %s", strings.Join(os.Args[2:], " "), usage())
		}
		cmdList()
	case "time":
		os.Exit(cmdTime(os.Args[2:]))
	case "serve":
		if len(os.Args) > 2 {
			badInput("serve takes no arguments, got %q; %s", strings.Join(os.Args[2:], " "), usage())
		}
		cmdServe()
	default:
		msg := fmt.Sprintf("unknown subcommand %q", os.Args[1])
		if m := closeMatches(os.Args[1], []string{"list", "time", "serve"}); len(m) > 0 {
			msg += "; did you mean " + m[0] + "?"
		}
		badInput("%s; %s", msg, usage())
	}
}
