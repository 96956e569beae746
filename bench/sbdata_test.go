package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestWriteSysbenchCSV checks the rows against sysbench's shape: ids 1..N
// in order, k in [1, N] and, under "special", three quarters of them in
// the middle 1% of the range; c 10 groups and pad 5 groups of 11 digits
// (119 and 59 characters).
func TestWriteSysbenchCSV(t *testing.T) {
	const n = 20000
	for _, kind := range []string{"special", "uniform"} {
		var b bytes.Buffer
		if err := WriteSysbenchCSV(&b, n, kind, 1); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != n {
			t.Fatalf("%s: %d lines, want %d", kind, len(lines), n)
		}
		middle := 0
		for i, l := range lines {
			f := strings.Split(l, ",")
			if len(f) != 4 || f[0] != strconv.Itoa(i+1) {
				t.Fatalf("%s: line %d: %q", kind, i+1, l)
			}
			k, err := strconv.Atoi(f[1])
			if err != nil || k < 1 || k > n {
				t.Fatalf("%s: line %d: k %q out of [1, %d]", kind, i+1, f[1], n)
			}
			if k >= n/2-n/200-1 && k <= n/2+n/200+1 {
				middle++
			}
			for j, want := range []int{10, 5} {
				groups := strings.Split(f[2+j], "-")
				if len(groups) != want || len(f[2+j]) != want*12-1 {
					t.Fatalf("%s: line %d: %q is not %d groups", kind, i+1, f[2+j], want)
				}
				for _, g := range groups {
					if len(g) != 11 || strings.Trim(g, "0123456789") != "" {
						t.Fatalf("%s: line %d: group %q", kind, i+1, g)
					}
				}
			}
		}
		share := float64(middle) / n
		if kind == "special" && (share < 0.70 || share > 0.82) {
			t.Errorf("special: %.2f of k in the middle 1%%, want about 0.75 (plus the gaussian's share)", share)
		}
		if kind == "uniform" && share > 0.05 {
			t.Errorf("uniform: %.2f of k in the middle 1%%", share)
		}
	}
}
