package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/basalt-db/basalt/expression"
)

// This file describes plans for EXPLAIN: one row per operator, depth
// first, each with its name indented by its depth, its estimated rows
// (estimate.go) and what it does. The names are TiDB's where TiDB has the
// operator.

// ExplainRow is one operator of a plan, as EXPLAIN shows it.
type ExplainRow struct {
	ID      string // the operator's name, indented two spaces per level
	EstRows string // the estimated rows, with two decimals
	Info    string // the operator info
	Op      Plan   // the operator, for what EXPLAIN ANALYZE adds
}

// Explain describes the plan p, root first.
func Explain(p Plan) []ExplainRow {
	var rows []ExplainRow
	var walk func(p Plan, depth int)
	walk = func(p Plan, depth int) {
		name, info := Describe(p)
		rows = append(rows, ExplainRow{ID: strings.Repeat("  ", depth) + name,
			EstRows: strconv.FormatFloat(EstRows(p), 'f', 2, 64), Info: info, Op: p})
		for _, c := range p.Children() {
			walk(c, depth+1)
		}
	}
	walk(p, 0)
	return rows
}

// Describe names one operator and describes it.
func Describe(p Plan) (string, string) {
	switch x := p.(type) {
	case *PointGet:
		if x.Index != nil {
			return "Point_Get", fmt.Sprintf("table:%s, index:%s", x.Table.Name, x.Index.Name)
		}
		return "Point_Get", fmt.Sprintf("table:%s, handle:%s", x.Table.Name, expression.String(x.Handle))
	case *BatchPointGet:
		if x.Index != nil {
			return "Batch_Point_Get", fmt.Sprintf("table:%s, index:%s, keys:%d", x.Table.Name, x.Index.Name, len(x.Handles))
		}
		return "Batch_Point_Get", fmt.Sprintf("table:%s, handles:%d", x.Table.Name, len(x.Handles))
	case *TableScan:
		order := ""
		if x.Desc {
			order = ", desc"
		}
		switch {
		case x.Ranges != nil:
			return "TableRangeScan", fmt.Sprintf("table:%s, range:%s%s", x.Table.Name, formatKeyRanges([]KeyRange{{Last: x.Ranges}}), order)
		case x.KeyRanges != nil:
			return "TableRangeScan", fmt.Sprintf("table:%s, range:%s%s", x.Table.Name, formatKeyRanges(x.KeyRanges), order)
		}
		return "TableFullScan", "table:" + x.Table.Name + order
	case *IndexScan:
		order := ""
		if x.Desc {
			order = ", desc"
		}
		if x.Limit != nil {
			order += ", limit:" + expression.String(x.Limit)
		}
		return "IndexLookUp", fmt.Sprintf("table:%s, index:%s(%s), range:%s%s", x.Table.Name, x.Index.Name, indexColumnNames(x), formatKeyRanges(x.Ranges), order)
	case *Selection:
		return "Selection", expression.String(x.Cond)
	case *Projection:
		parts := make([]string, len(x.Exprs))
		for i, e := range x.Exprs {
			parts[i] = expression.String(e)
		}
		return "Projection", strings.Join(parts, ", ")
	case *Aggregation:
		parts := make([]string, len(x.Aggs))
		for i, a := range x.Aggs {
			parts[i] = a.Name
		}
		return "HashAgg", fmt.Sprintf("group by:%d, funcs:%s", len(x.GroupBy), strings.Join(parts, ","))
	case *Sort:
		return "Sort", fmt.Sprintf("items:%d", len(x.Items))
	case *Limit:
		return "Limit", ""
	case *Distinct:
		return "Distinct", ""
	case *Dual:
		return "TableDual", ""
	case *Trim:
		return "Trim", fmt.Sprintf("columns:%d", x.N)
	case *Join:
		return DescribeJoin(x)
	case *SetOp:
		return "SetOp", SetOpName(x.Op)
	case *RecursiveCTE:
		return "RecursiveCTE", fmt.Sprintf("distinct:%v", x.Distinct)
	case *WorkTable:
		return "WorkTable", ""
	}
	return fmt.Sprintf("%T", p), ""
}

func indexColumnNames(x *IndexScan) string {
	names := make([]string, len(x.Index.Columns))
	for i, c := range x.Index.Columns {
		names[i] = x.Table.Columns[c.Offset].Name
	}
	return strings.Join(names, ", ")
}

// maxExplainRanges caps the ranges EXPLAIN spells out; the rest are
// counted.
const maxExplainRanges = 20

// formatKeyRanges writes key ranges as TiDB's EXPLAIN does: one
// [low,high] per range, the values of its columns separated by spaces,
// ( and ) for exclusive bounds, -inf and +inf for unbounded ones. The
// cross products of points are spelled out. A range intersected with
// further unions is followed by "and" and those unions in braces.
func formatKeyRanges(krs []KeyRange) string {
	var parts []string
	more := 0
	for _, kr := range krs {
		prefixes := [][]string{nil}
		for _, pts := range kr.Eq {
			var next [][]string
			for _, p := range prefixes {
				for _, v := range pts {
					next = append(next, append(append([]string(nil), p...), expression.String(v)))
				}
			}
			prefixes = next
		}
		for _, p := range prefixes {
			pre := strings.Join(p, " ")
			if pre != "" {
				pre += " "
			}
			if kr.Last == nil {
				if len(parts) < maxExplainRanges {
					parts = append(parts, "["+strings.Join(p, " ")+","+strings.Join(p, " ")+"]")
				} else {
					more++
				}
				continue
			}
			for _, r := range kr.Last {
				if len(parts) >= maxExplainRanges {
					more++
					continue
				}
				s := formatRange(pre, r)
				if len(r.And) > 0 {
					for _, u := range r.And {
						var us []string
						for _, ur := range u {
							us = append(us, formatRange(pre, ur))
						}
						s += " and {" + strings.Join(us, ", ") + "}"
					}
				}
				parts = append(parts, s)
			}
		}
	}
	out := strings.Join(parts, ", ")
	if more > 0 {
		out += fmt.Sprintf(", ...(%d more)", more)
	}
	return out
}

func formatRange(pre string, r Range) string {
	lo, hi, lb, hb := "-inf", "+inf", "[", "]"
	if r.Low != nil {
		lo = expression.String(r.Low)
		if r.LowExcl {
			lb = "("
		}
	}
	if r.High != nil {
		hi = expression.String(r.High)
		if r.HighExcl {
			hb = ")"
		}
	}
	return lb + pre + lo + "," + pre + hi + hb
}

// DescribeJoin names a join operator and describes it, for EXPLAIN.
func DescribeJoin(j *Join) (string, string) {
	name := map[JoinMethod]string{HashJoin: "HashJoin", IndexJoin: "IndexJoin", NestedLoopJoin: "NestedLoopJoin"}[j.Method]
	tp := "inner join"
	if j.Type == LeftOuterJoin {
		tp = "left outer join"
	}
	var parts []string
	parts = append(parts, tp)
	if len(j.OuterKeys) > 0 {
		var keys []string
		for i, k := range j.OuterKeys {
			if j.Method == IndexJoin {
				keys = append(keys, expression.String(k))
			} else {
				keys = append(keys, fmt.Sprintf("%s = %s", expression.String(k), expression.String(j.InnerKeys[i])))
			}
		}
		label := "equal"
		if j.Method == IndexJoin {
			label = "outer keys"
		}
		parts = append(parts, fmt.Sprintf("%s:[%s]", label, strings.Join(keys, ", ")))
	}
	if j.Other != nil {
		parts = append(parts, "other:"+expression.String(j.Other))
	}
	return name, strings.Join(parts, ", ")
}
