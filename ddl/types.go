package ddl

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// checkTypeLimits rejects column types MySQL rejects: a scale above the
// precision (1427), strings longer than their type allows (1074), SETs of
// more than 64 members (1097), and, with members, ENUM or SET members
// that are equal under the column's collation (1291).
func checkTypeLimits(col *catalog.ColumnInfo, members bool) error {
	ft := &col.Type
	switch ft.Tp {
	case mysql.TypeNewDecimal, mysql.TypeFloat, mysql.TypeDouble:
		if ft.Flen > 0 && ft.Decimal > 0 && ft.Decimal < 31 && ft.Flen < ft.Decimal {
			return errno.New(errno.ErMBiggerThanD, "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '%s').", col.Name)
		}
	case mysql.TypeString:
		if ft.Flen > 255 {
			return tooBig(col, 255)
		}
	case mysql.TypeVarchar, mysql.TypeVarString:
		limit := 65535
		switch ft.Charset {
		case "binary", "latin1", "ascii":
		case "utf8mb3":
			limit = 21844
		default:
			limit = 16383
		}
		if ft.Flen > limit {
			return tooBig(col, limit)
		}
	case mysql.TypeSet:
		if len(ft.Elems) > 64 {
			return errno.New(errno.ErTooBigSet, "Too many strings for column %s and SET", col.Name)
		}
	}
	if ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet {
		for i, e := range ft.Elems {
			// MySQL drops members' trailing spaces.
			ft.Elems[i] = strings.TrimRight(e, " ")
		}
	}
	if members && (ft.Tp == mysql.TypeEnum || ft.Tp == mysql.TypeSet) {
		kind := "ENUM"
		if ft.Tp == mysql.TypeSet {
			kind = "SET"
		}
		coll := ft.Collation()
		for i, a := range ft.Elems {
			for _, b := range ft.Elems[:i] {
				if types.CompareStrings([]byte(a), []byte(b), coll) == 0 {
					return errno.New(errno.ErDuplicatedValueInType, "Column '%s' has duplicated value '%s' in %s", col.Name, b, kind)
				}
			}
		}
	}
	return nil
}

func tooBig(col *catalog.ColumnInfo, max int) error {
	return errno.New(errno.ErTooBigFieldlength, "Column length too big for column '%s' (max = %d); use BLOB or TEXT instead", col.Name, max)
}
