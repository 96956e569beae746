// Package parserdriver supplies the literal-value nodes that the TiDB
// parser builds (ast.NewValueExpr and friends), typed with Basalt's own
// types.Datum. Importing it (for its init) is what makes the parser usable;
// Parse here is the one way Basalt calls the parser.
package parserdriver

import (
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/basalt-db/basalt/types"
	"github.com/cockroachdb/apd/v3"
	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

func init() {
	ast.NewValueExpr = newValueExpr
	ast.NewParamMarkerExpr = func(offset int) ast.ParamMarkerExpr {
		return &ParamMarkerExpr{ValueExpr: ValueExpr{projectionOffset: -1}, Offset: offset}
	}
	ast.NewDecimal = func(s string) (any, error) { return types.ParseDecimal(s) }
	ast.NewHexLiteral = func(s string) (any, error) { return parseHex(s) }
	ast.NewBitLiteral = func(s string) (any, error) { return parseBits(s) }
}

// ValueExpr is a literal in a statement.
type ValueExpr struct {
	ast.TexprNode
	Datum types.Datum
	// IsBinaryLiteral marks x'..' and b'..' literals.
	IsBinaryLiteral  bool
	projectionOffset int
}

var (
	_ ast.ValueExpr       = (*ValueExpr)(nil)
	_ ast.ParamMarkerExpr = (*ParamMarkerExpr)(nil)
)

// BinaryLiteral is the value of an x'..' or b'..' literal.
type BinaryLiteral []byte

// ToString implements ast.BinaryLiteral.
func (b BinaryLiteral) ToString() string { return string(b) }

// ToBitLiteralString implements ast.BinaryLiteral.
func (b BinaryLiteral) ToBitLiteralString(bool) string { return "x'" + hex.EncodeToString(b) + "'" }

func newValueExpr(v any, _ string, _ string) ast.ValueExpr {
	if ve, ok := v.(*ValueExpr); ok {
		return ve
	}
	ve := &ValueExpr{projectionOffset: -1}
	ve.SetValue(v)
	return ve
}

// SetValue implements ast.ValueExpr.
func (n *ValueExpr) SetValue(v any) {
	n.IsBinaryLiteral = false
	switch x := v.(type) {
	case nil:
		n.Datum = types.Null
	case bool:
		n.Datum = types.NewBool(x)
		n.Type.SetType(mysql.TypeLonglong)
		n.Type.AddFlag(mysql.IsBooleanFlag)
		return
	case int:
		n.Datum = types.NewInt(int64(x))
	case int64:
		n.Datum = types.NewInt(x)
	case uint64:
		n.Datum = types.NewUint(x)
	case float64:
		n.Datum = types.NewFloat(x)
	case float32:
		n.Datum = types.NewFloat(float64(x))
	case string:
		n.Datum = types.NewString(x)
	case []byte:
		n.Datum = types.NewBytes(x)
	case *apd.Decimal:
		n.Datum = types.NewDecimal(x)
	case BinaryLiteral:
		n.Datum = types.NewBytes(x)
		n.IsBinaryLiteral = true
	case types.Datum:
		n.Datum = x
	default:
		panic(fmt.Sprintf("parserdriver: unexpected literal %T", v))
	}
	n.typeOfKind()
}

// SetDatum is SetValue(d) without boxing d (Template.Bind, per literal of
// every statement it binds).
func (n *ValueExpr) SetDatum(d types.Datum) {
	n.IsBinaryLiteral = false
	n.Datum = d
	n.typeOfKind()
}

// typeOfKind sets the literal's type to its datum's kind's.
func (n *ValueExpr) typeOfKind() {
	switch n.Datum.Kind() {
	case types.KindNull:
		n.Type.SetType(mysql.TypeNull)
	case types.KindInt, types.KindUint:
		n.Type.SetType(mysql.TypeLonglong)
	case types.KindFloat:
		n.Type.SetType(mysql.TypeDouble)
	case types.KindDecimal:
		n.Type.SetType(mysql.TypeNewDecimal)
	case types.KindString:
		n.Type.SetType(mysql.TypeVarString)
	}
}

// GetValue implements ast.ValueExpr.
func (n *ValueExpr) GetValue() any {
	d := n.Datum
	switch d.Kind() {
	case types.KindInt:
		return d.Int()
	case types.KindUint:
		return d.Uint()
	case types.KindFloat:
		return d.Float()
	case types.KindDecimal:
		return d.Decimal()
	case types.KindString:
		return d.Str()
	case types.KindNull:
		return nil
	}
	return d.String()
}

// GetDatumString implements ast.ValueExpr.
func (n *ValueExpr) GetDatumString() string { return n.GetString() }

// GetString implements ast.ValueExpr.
func (n *ValueExpr) GetString() string {
	if n.Datum.IsNull() {
		return ""
	}
	return string(types.ToText(n.Datum))
}

// GetProjectionOffset implements ast.ValueExpr.
func (n *ValueExpr) GetProjectionOffset() int { return n.projectionOffset }

// SetProjectionOffset implements ast.ValueExpr.
func (n *ValueExpr) SetProjectionOffset(o int) { n.projectionOffset = o }

// Restore implements ast.Node.
func (n *ValueExpr) Restore(ctx *format.RestoreCtx) error {
	d := n.Datum
	switch {
	case d.IsNull():
		ctx.WriteKeyWord("NULL")
	case n.IsBinaryLiteral:
		ctx.WritePlain("x'" + hex.EncodeToString(d.Bytes()) + "'")
	case d.Kind() == types.KindString:
		ctx.WriteString(d.Str())
	case n.Type.GetFlag()&mysql.IsBooleanFlag != 0:
		if d.Int() != 0 {
			ctx.WriteKeyWord("TRUE")
		} else {
			ctx.WriteKeyWord("FALSE")
		}
	default:
		ctx.WritePlain(d.String())
	}
	return nil
}

// Format implements ast.ValueExpr.
func (n *ValueExpr) Format(w io.Writer) {
	if n.Datum.Kind() == types.KindString {
		fmt.Fprint(w, strconv.Quote(n.Datum.Str()))
		return
	}
	fmt.Fprint(w, n.Datum.String())
}

// Accept implements ast.Node.
func (n *ValueExpr) Accept(v ast.Visitor) (ast.Node, bool) {
	newNode, skip := v.Enter(n)
	if skip {
		return v.Leave(newNode)
	}
	return v.Leave(newNode)
}

// ParamMarkerExpr is a '?' placeholder of a prepared statement. Order is its
// position among the statement's placeholders.
//
// A trigger's body reads NEW.col and OLD.col as placeholders too, with
// Typed set: their values have the column's type, which the node's Type
// (GetType, GetFlen, ...) holds.
type ParamMarkerExpr struct {
	ValueExpr
	Offset int
	Order  int
	Typed  bool
}

// SetOrder implements ast.ParamMarkerExpr.
func (n *ParamMarkerExpr) SetOrder(o int) { n.Order = o }

// Restore implements ast.Node.
func (n *ParamMarkerExpr) Restore(ctx *format.RestoreCtx) error {
	ctx.WritePlain("?")
	return nil
}

// Accept implements ast.Node.
func (n *ParamMarkerExpr) Accept(v ast.Visitor) (ast.Node, bool) {
	newNode, skip := v.Enter(n)
	if skip {
		return v.Leave(newNode)
	}
	return v.Leave(newNode)
}

func parseHex(s string) (BinaryLiteral, error) {
	switch {
	case strings.HasPrefix(s, "x'") || strings.HasPrefix(s, "X'"):
		s = strings.Trim(s[1:], "'")
	case strings.HasPrefix(s, "0x"):
		s = s[2:]
		if len(s)%2 == 1 {
			s = "0" + s
		}
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid hexadecimal literal %q", s)
	}
	return BinaryLiteral(b), nil
}

func parseBits(s string) (BinaryLiteral, error) {
	switch {
	case strings.HasPrefix(s, "b'") || strings.HasPrefix(s, "B'"):
		s = strings.Trim(s[1:], "'")
	case strings.HasPrefix(s, "0b"):
		s = s[2:]
	}
	if s == "" {
		return BinaryLiteral{}, nil
	}
	v, ok := new(big.Int).SetString(s, 2)
	if !ok {
		return nil, fmt.Errorf("invalid bit literal %q", s)
	}
	b := v.Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	return BinaryLiteral(b), nil
}

// Parse parses sql into statements. Parsers are not safe for concurrent
// use; the caller owns p.
func Parse(p *parser.Parser, sql string) ([]ast.StmtNode, error) {
	stmts, _, err := p.ParseSQL(sql)
	return stmts, err
}
