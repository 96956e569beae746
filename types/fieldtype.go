package types

import "github.com/pingcap/tidb/pkg/parser/mysql"

// FieldType is the declared type of a column, or the type an expression
// yields: MySQL's type code, flags, length, scale, charset and collation.
// Its JSON form is stored in the catalog's table records.
type FieldType struct {
	Tp      byte     `json:"tp"`      // mysql.Type*
	Flag    uint     `json:"flag"`    // mysql.*Flag: UnsignedFlag, NotNullFlag, BinaryFlag, ...
	Flen    int      `json:"flen"`    // display length; for strings the length in characters
	Decimal int      `json:"decimal"` // scale of DECIMAL, fsp of times
	Charset string   `json:"charset,omitempty"`
	Collate string   `json:"collate,omitempty"`
	Elems   []string `json:"elems,omitempty"` // ENUM and SET members
}

// Unsigned reports an UNSIGNED numeric type.
func (ft *FieldType) Unsigned() bool { return ft.Flag&mysql.UnsignedFlag != 0 }

// NotNull reports a NOT NULL column.
func (ft *FieldType) NotNull() bool { return ft.Flag&mysql.NotNullFlag != 0 }

// IsString reports a character or binary string type.
func (ft *FieldType) IsString() bool {
	switch ft.Tp {
	case mysql.TypeVarchar, mysql.TypeString, mysql.TypeVarString, mysql.TypeBlob,
		mysql.TypeTinyBlob, mysql.TypeMediumBlob, mysql.TypeLongBlob, mysql.TypeEnum, mysql.TypeSet:
		return true
	}
	return false
}

// IsBinary reports a binary string type (BINARY, VARBINARY, BLOB).
func (ft *FieldType) IsBinary() bool { return ft.IsString() && ft.Charset == "binary" }

// IsInteger reports an integer type.
func (ft *FieldType) IsInteger() bool {
	switch ft.Tp {
	case mysql.TypeTiny, mysql.TypeShort, mysql.TypeInt24, mysql.TypeLong, mysql.TypeLonglong, mysql.TypeYear:
		return true
	}
	return false
}

// Collation returns how values of this type compare: JSON as JSON text,
// binary strings as bytes, text under the type's collation (the default,
// utf8mb4_general_ci, when it names none).
func (ft *FieldType) Collation() Collation {
	switch {
	case ft.Tp == mysql.TypeJSON:
		return CollationJSON
	case ft.Charset == "binary":
		return CollationBinary
	}
	return CollationOf(ft.Collate)
}

// IsText reports a character string type whose values carry a collation
// (CHAR, VARCHAR, TEXT, ENUM, SET; not the binary strings nor JSON).
func (ft *FieldType) IsText() bool {
	return ft.IsString() && ft.Charset != "binary" && ft.Tp != mysql.TypeJSON
}

// CollationName is the collation SHOW, information_schema and the result
// set metadata report for a text type: the one it names (by its canonical
// name when Basalt knows it), utf8mb4_general_ci when it names none.
func (ft *FieldType) CollationName() string {
	if ft.Collate != "" {
		if name, _, _, ok := LookupCollation(ft.Collate); ok {
			return name
		}
		return ft.Collate
	}
	return "utf8mb4_general_ci"
}

// IntegerDigits is the number of digits left of the point in the widest
// value of a numeric type: the precision less the scale for a DECIMAL,
// the digits of the largest value for an integer, 65 (DECIMAL's most)
// for anything else.
func (ft *FieldType) IntegerDigits() int {
	switch ft.Tp {
	case mysql.TypeNewDecimal:
		if ft.Flen > 0 {
			return max(ft.Flen-max(ft.Decimal, 0), 1)
		}
	case mysql.TypeTiny:
		return 3
	case mysql.TypeShort:
		return 5
	case mysql.TypeInt24:
		return 8
	case mysql.TypeLong:
		return 10
	case mysql.TypeLonglong:
		if ft.Unsigned() {
			return 20
		}
		return 19
	case mysql.TypeYear:
		return 4
	}
	return 65
}
