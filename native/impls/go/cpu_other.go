//go:build !amd64

package main

func archOptions(purego bool) string {
	if purego {
		return "purego build: generic Go code only"
	}
	return ""
}
