package config

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		err  string
	}{
		{in: "0", want: 0},
		{in: "1024", want: 1024},
		{in: "100B", want: 100},
		{in: "1K", want: KiB},
		{in: "1KB", want: KiB},
		{in: "1KiB", want: KiB},
		{in: "256MiB", want: 256 * MiB},
		{in: "256MB", want: 256 * MiB},
		{in: "256mb", want: 256 * MiB},
		{in: "1GB", want: GiB},
		{in: "1gib", want: GiB},
		{in: " 2 GiB ", want: 2 * GiB},
		{in: "1.5GiB", want: 1536 * MiB},
		{in: "0.5K", want: 512},
		{in: "2TB", want: 2 * TiB},
		{in: "1PiB", want: PiB},
		{in: "", err: "want a number and a unit"},
		{in: "GiB", err: "want a number and a unit"},
		{in: "-1MiB", err: "want a number and a unit"},
		{in: "1XB", err: `unknown unit "XB"`},
		{in: "1 MiB extra", err: "unknown unit"},
		{in: "1.2.3MiB", err: "bad number"},
		{in: "9223372036854775807", want: 9223372036854775807},
		{in: "9223372036854775808", err: "too large"},
		{in: "8192PiB", err: "too large"},
		{in: "8191.99999PiB", err: ""},
		{in: "99999999999PiB", err: "too large"},
		{in: "9000000000.0PiB", err: "too large"},
	} {
		got, err := ParseByteSize(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseByteSize(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.err)
			}
		case err != nil:
			t.Errorf("ParseByteSize(%q): %v", tc.in, err)
		case tc.want != 0 && got != tc.want:
			t.Errorf("ParseByteSize(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for _, tc := range []struct {
		in   ByteSize
		want string
	}{
		{0, "0B"},
		{1000, "1000B"},
		{KiB, "1KiB"},
		{1536 * KiB, "1536KiB"},
		{256 * MiB, "256MiB"},
		{4 * GiB, "4GiB"},
		{3 * PiB, "3PiB"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", int64(tc.in), got, tc.want)
		}
		back, err := ParseByteSize(tc.want)
		if err != nil || back != tc.in {
			t.Errorf("ParseByteSize(%q) = %v, %v; want %d", tc.want, back, err, int64(tc.in))
		}
	}
}
