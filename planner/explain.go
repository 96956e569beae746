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
		if x.Ranges == nil {
			return "TableFullScan", "table:" + x.Table.Name
		}
		return "TableRangeScan", fmt.Sprintf("table:%s, ranges:%d", x.Table.Name, len(x.Ranges))
	case *IndexScan:
		return "IndexLookUp", fmt.Sprintf("table:%s, index:%s, ranges:%d", x.Table.Name, x.Index.Name, len(x.Ranges))
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
