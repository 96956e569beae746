package trigger

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// mentionsByByte is Mentions as a loop over every byte.
func mentionsByByte(sql string) bool {
	for i := 0; i+7 <= len(sql); i++ {
		if strings.EqualFold(sql[i:i+7], "trigger") {
			return true
		}
		if i+8 <= len(sql) && strings.EqualFold(sql[i:i+8], "checksum") {
			return true
		}
	}
	return false
}

func TestMentions(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want bool
	}{
		{"CREATE TRIGGER t1 BEFORE INSERT ON t FOR EACH ROW SET @a = 1", true},
		{"drop trigger t1", true},
		{"select 1; TrIgGeR", true},
		{"trigge", false},
		{"CHECKSUM TABLE t", true},
		{"checksu", false},
		{"INSERT INTO t VALUES (1, 'gg'), (2, 'ks')", false},
		{"gg", false},
		{"", false},
	} {
		if got := Mentions(c.sql); got != c.want {
			t.Errorf("Mentions(%q) = %v, want %v", c.sql, got, c.want)
		}
	}
	// Random texts over the words' letters in both cases, and others.
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "triggerTRIGGERchecksumCHECKSUMxX '-1"
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		if rng.IntN(4) == 0 {
			w := []string{"trigger", "checksum", "tRiGgEr", "ChEcKsUm"}[rng.IntN(4)]
			at := rng.IntN(len(b) + 1)
			b = append(b[:at], append([]byte(w), b[at:]...)...)
		}
		if got, want := Mentions(string(b)), mentionsByByte(string(b)); got != want {
			t.Fatalf("Mentions(%q) = %v, want %v", b, got, want)
		}
	}
}

// BenchmarkMentions: a bulk INSERT of sysbench rows, about 1 MB.
func BenchmarkMentions(b *testing.B) {
	var q strings.Builder
	q.WriteString("INSERT INTO sbtest1(k, c, pad) VALUES")
	for i := range 5000 {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString("(499284, '83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-93426793964-56405065102-33518432330', '67847967377-48000963322-62604785301-91415491898-96926520291')")
	}
	sql := q.String()
	b.SetBytes(int64(len(sql)))
	for b.Loop() {
		if Mentions(sql) {
			b.Fatal("mentions")
		}
	}
}
