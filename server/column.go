package server

// FieldType is a column's type code on the wire (enum_field_types). It decides
// how a value is encoded in a binary result row and how clients decode it.
type FieldType uint8

// Type codes, with the binary-protocol encoding of each.
const (
	TypeDecimal    FieldType = 0x00 // lenenc string
	TypeTiny       FieldType = 0x01 // 1 byte
	TypeShort      FieldType = 0x02 // 2 bytes
	TypeLong       FieldType = 0x03 // 4 bytes
	TypeFloat      FieldType = 0x04 // 4 bytes, IEEE 754
	TypeDouble     FieldType = 0x05 // 8 bytes, IEEE 754
	TypeNull       FieldType = 0x06 // no bytes; always NULL
	TypeTimestamp  FieldType = 0x07 // date-time, see binary.go
	TypeLongLong   FieldType = 0x08 // 8 bytes
	TypeInt24      FieldType = 0x09 // 4 bytes
	TypeDate       FieldType = 0x0a // date-time
	TypeTime       FieldType = 0x0b // time
	TypeDateTime   FieldType = 0x0c // date-time
	TypeYear       FieldType = 0x0d // 2 bytes
	TypeNewDate    FieldType = 0x0e // internal to MySQL; sent as TypeDate
	TypeVarChar    FieldType = 0x0f // lenenc string
	TypeBit        FieldType = 0x10 // lenenc string
	TypeVector     FieldType = 0xf2 // lenenc string
	TypeJSON       FieldType = 0xf5 // lenenc string
	TypeNewDecimal FieldType = 0xf6 // lenenc string
	TypeEnum       FieldType = 0xf7 // lenenc string
	TypeSet        FieldType = 0xf8 // lenenc string
	TypeTinyBlob   FieldType = 0xf9 // lenenc string
	TypeMediumBlob FieldType = 0xfa // lenenc string
	TypeLongBlob   FieldType = 0xfb // lenenc string
	TypeBlob       FieldType = 0xfc // lenenc string
	TypeVarString  FieldType = 0xfd // lenenc string
	TypeString     FieldType = 0xfe // lenenc string
	TypeGeometry   FieldType = 0xff // lenenc string
)

// isStringType reports whether values of t are character or byte strings,
// whose column charset is a real collation rather than binary (63).
func (t FieldType) isStringType() bool {
	switch t {
	case TypeVarChar, TypeVarString, TypeString, TypeTinyBlob, TypeMediumBlob,
		TypeLongBlob, TypeBlob, TypeEnum, TypeSet, TypeJSON:
		return true
	}
	return false
}

// ColumnFlag is the column definition's flags field.
type ColumnFlag uint16

const (
	FlagNotNull       ColumnFlag = 1 << 0
	FlagPriKey        ColumnFlag = 1 << 1
	FlagUniqueKey     ColumnFlag = 1 << 2
	FlagMultipleKey   ColumnFlag = 1 << 3
	FlagBlob          ColumnFlag = 1 << 4
	FlagUnsigned      ColumnFlag = 1 << 5
	FlagZerofill      ColumnFlag = 1 << 6
	FlagBinary        ColumnFlag = 1 << 7
	FlagEnum          ColumnFlag = 1 << 8
	FlagAutoIncrement ColumnFlag = 1 << 9
	FlagTimestamp     ColumnFlag = 1 << 10
	FlagSet           ColumnFlag = 1 << 11
	FlagNoDefault     ColumnFlag = 1 << 12
	FlagOnUpdateNow   ColumnFlag = 1 << 13
	FlagNum           ColumnFlag = 1 << 15
)

// NotFixedDecimals in Column.Decimals marks a FLOAT or DOUBLE column whose
// values are shown with as many digits as they need (MySQL's NOT_FIXED_DEC).
const NotFixedDecimals = 31

// Collation ids the server uses by itself.
const (
	CollationBinary         = 63
	CollationUTF8MB4General = 45
)

// Column describes one column of a result set (or of COM_FIELD_LIST).
type Column struct {
	Schema   string // database of the underlying table
	Table    string // table name as the query named it (an alias, if any)
	OrgTable string // the underlying table's name
	Name     string // column name as the query named it (an alias, if any)
	OrgName  string // the underlying column's name

	Type  FieldType
	Flags ColumnFlag

	// Length is the column's maximum display length in bytes.
	Length uint32

	// Decimals is the number of digits after the point: for DECIMAL, the
	// scale; for FLOAT and DOUBLE, a fixed number of decimals or
	// NotFixedDecimals; for TIME, DATETIME and TIMESTAMP, the fractional
	// seconds precision 0..6.
	Decimals uint8

	// Charset is the collation id of the column's values. Zero lets the
	// server choose: binary (63) for numbers, dates and columns flagged
	// BINARY, and the connection's collation for character strings.
	Charset uint16
}

// charset returns the collation id sent for c.
func (c *Column) charset(connCollation uint16) uint16 {
	switch {
	case c.Charset != 0:
		return c.Charset
	case c.Type.isStringType() && c.Flags&FlagBinary == 0:
		return connCollation
	default:
		return CollationBinary
	}
}

// appendColumnDef appends a Protocol::ColumnDefinition41 payload:
//
//	lenenc "def"  catalog
//	lenenc        schema
//	lenenc        table
//	lenenc        org_table
//	lenenc        name
//	lenenc        org_name
//	lenenc 0x0c   length of the fixed fields that follow
//	2             character set (collation id)
//	4             column length
//	1             type
//	2             flags
//	1             decimals
//	2             0x00 0x00 filler
//
// COM_FIELD_LIST's rows add the column default as a lenenc string; we send
// NULL (0xFB) there.
func appendColumnDef(b []byte, c *Column, connCollation uint16, fieldList bool) []byte {
	b = appendLenencString(b, "def")
	b = appendLenencString(b, c.Schema)
	b = appendLenencString(b, c.Table)
	b = appendLenencString(b, c.OrgTable)
	b = appendLenencString(b, c.Name)
	b = appendLenencString(b, c.OrgName)
	b = append(b, 0x0c)
	b = appendUint16(b, c.charset(connCollation))
	b = appendUint32(b, c.Length)
	typ := c.Type
	if typ == TypeNewDate {
		typ = TypeDate
	}
	b = append(b, byte(typ))
	b = appendUint16(b, uint16(c.Flags))
	b = append(b, c.Decimals, 0, 0)
	if fieldList {
		b = append(b, lenencNull)
	}
	return b
}
