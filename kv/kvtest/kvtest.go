// Package kvtest is the behaviour every kv.Storage shares, as scripts of
// transactions that any storage runs with Run (txn.go, testdata/): the
// embedded store now, the cluster's adapter later. It also writes and
// reads keys and values in the command scripts of the storage tests:
// plain words, Go-quoted strings for other bytes, and "x*300" for 300 x's.
//
// It sits below the stores and imports none of them.
package kvtest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Parse reads a script's key or value.
func Parse(t testing.TB, s string) []byte {
	t.Helper()
	if strings.HasPrefix(s, `"`) {
		u, err := strconv.Unquote(s)
		if err != nil {
			t.Fatalf("bad quoted string %s: %v", s, err)
		}
		return []byte(u)
	}
	if c, n, ok := strings.Cut(s, "*"); ok && len(c) == 1 {
		k, err := strconv.Atoi(n)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.Repeat(c, k))
	}
	return []byte(s)
}

// Format writes bytes as a script would: long runs of one byte as "x*N",
// words as they are, anything else Go-quoted.
func Format(b []byte) string {
	s := string(b)
	if len(s) > 20 && strings.Count(s, s[:1]) == len(s) {
		return fmt.Sprintf("%s*%d", s[:1], len(s))
	}
	if strconv.CanBackquote(s) && !strings.ContainsAny(s, " =,\"()") && s != "" {
		return s
	}
	return strconv.Quote(s)
}
