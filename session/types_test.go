package session_test

import (
	"database/sql"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestTypesRoundTrip writes a value of every supported column type, and
// NULLs, through prepared statements (binary protocol) and reads them back
// both as prepared and as plain queries (text protocol).
func TestTypesRoundTrip(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	must := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("CREATE DATABASE tt")
	must("USE tt")
	must(`CREATE TABLE ty (
		id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, i INT, bi BIGINT,
		tu TINYINT UNSIGNED, bu BIGINT UNSIGNED, de DECIMAL(30,5), fl FLOAT, db DOUBLE,
		ch CHAR(10), vc VARCHAR(100), tx TEXT, bn BINARY(3), vb VARBINARY(10), bl BLOB,
		da DATE, dt DATETIME(6), ts TIMESTAMP, tm TIME)`)
	dt := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	row := []any{1, int8(-128), int16(32767), -8388608, int32(math.MinInt32), int64(math.MaxInt64),
		uint8(255), uint64(math.MaxUint64), "-12345678901234567890.12345", float32(1.5), 2.25,
		"chars", "héllo wörld", "a long text", []byte{0, 1, 2}, []byte{0xff, 0}, []byte("blob\x00data"),
		"2024-02-29", dt, "2001-02-03 04:05:06", "12:34:56"}
	must("INSERT INTO ty VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", row...)
	nulls := make([]any, len(row))
	nulls[0] = 2
	must("INSERT INTO ty VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", nulls...)

	want := "1|-128|32767|-8388608|-2147483648|9223372036854775807|255|18446744073709551615|-12345678901234567890.12345|1.5|2.25|" +
		"chars|héllo wörld|a long text|\x00\x01\x02|\xff\x00|blob\x00data|2024-02-29|2024-02-29 13:14:15.123456|2001-02-03 04:05:06|12:34:56"
	wantNull := "2" + fmt.Sprint(repeatNull(len(row)-1))
	for _, prepared := range []bool{true, false} {
		var rows *sql.Rows
		var err error
		q := "SELECT * FROM ty ORDER BY id"
		if prepared {
			rows, err = db.Query(q+" LIMIT ?", 10)
		} else {
			rows, err = db.Query(q)
		}
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			vals := make([]sql.RawBytes, len(row))
			ptrs := make([]any, len(row))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			s := ""
			for i, v := range vals {
				if i > 0 {
					s += "|"
				}
				if v == nil {
					s += "NULL"
				} else {
					s += string(v)
				}
			}
			got = append(got, s)
		}
		rows.Close()
		if len(got) != 2 || got[0] != want || got[1] != wantNull {
			t.Errorf("prepared=%v:\n got %q\nwant %q\n and %q", prepared, got, want, wantNull)
		}
	}
}

func repeatNull(n int) string {
	s := ""
	for range n {
		s += "|NULL"
	}
	return s
}

// TestNoNegativeZero: a zero DECIMAL or DOUBLE result has no sign in the
// binary protocol either (types.test checks the text protocol against
// MariaDB).
func TestNoNegativeZero(t *testing.T) {
	db, err := sql.Open("mysql", startBasalt(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dec1, dec2 string
	var dbl float64
	// The parameter makes go-sql-driver prepare the statement.
	err = db.QueryRow("SELECT ROUND(-0.4 * ?), CAST(-0.001 * ? AS DECIMAL(5,2)), -0.5e0 * ? * 0", 1, 1, 1).Scan(&dec1, &dec2, &dbl)
	if err != nil {
		t.Fatal(err)
	}
	if dec1 != "0" || dec2 != "0.00" || math.Signbit(dbl) {
		t.Errorf("got %q, %q, %v (sign bit %v); want 0, 0.00 and a positive 0", dec1, dec2, dbl, math.Signbit(dbl))
	}
}
