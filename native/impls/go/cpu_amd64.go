package main

import "fmt"

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// x86Features reads CPUID the way Go's internal/cpu does (AVX needs OS support of the YMM state) and names
// the features Go's crypto packages choose their amd64 code by.
func x86Features() (avx2, bmi2, adx, sha bool) {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return
	}
	_, _, ecx1, _ := cpuid(1, 0)
	osAVX := false
	if ecx1&(1<<27) != 0 { // OSXSAVE
		eax, _ := xgetbv()
		osAVX = eax&(1<<1) != 0 && eax&(1<<2) != 0 // XMM and YMM state
	}
	avx := ecx1&(1<<28) != 0 && osAVX
	_, ebx7, _, _ := cpuid(7, 0)
	avx2 = avx && ebx7&(1<<5) != 0
	bmi2 = ebx7&(1<<8) != 0
	adx = ebx7&(1<<19) != 0
	sse41, ssse3 := ecx1&(1<<19) != 0, ecx1&(1<<9) != 0
	sha = avx && ebx7&(1<<29) != 0 && sse41 && ssse3
	return
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// archOptions describes the code paths of Go's crypto on amd64 (Go 1.26 source: crypto/internal/fips140/...).
func archOptions(purego bool) string {
	avx2, bmi2, adx, sha := x86Features()
	s := fmt.Sprintf("CPUID: AVX2 %s, BMI2 %s, ADX %s, SHA-NI %s", yesNo(avx2), yesNo(bmi2), yesNo(adx), yesNo(sha))
	if purego {
		return s + "; purego build: generic Go code only"
	}
	sha256 := "generic"
	if sha {
		sha256 = "SHA-NI"
	} else if avx2 && bmi2 {
		sha256 = "AVX2"
	}
	return s + fmt.Sprintf("; chosen at run time: SHA-256 %s, SHA-512 %s, RSA bigmod ADX %s"+
		"; fixed amd64 assembly: Keccak-f[1600] (ML-KEM's SHA-3/SHAKE), P-256, edwards25519 field"+
		"; ML-KEM polynomial arithmetic is pure Go",
		sha256, map[bool]string{true: "AVX2", false: "generic"}[avx2 && bmi2], yesNo(adx && bmi2))
}
