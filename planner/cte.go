package planner

import (
	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/expression"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

type cteScope struct{}

func (c *Context) withCTEs(w *ast.WithClause) (*Context, error) {
	return nil, errno.New(errno.ErNotSupportedYet, "WITH is not supported yet")
}

type cteDef struct{}

func (c *Context) cte(tn *ast.TableName) *cteDef { return nil }

func (c *Context) buildCTERef(d *cteDef, alias string) (Plan, *expression.Schema, error) {
	return nil, nil, nil
}

type viewDef struct{}

func (c *Context) view(tn *ast.TableName) *viewDef { return nil }

func (c *Context) buildViewRef(d *viewDef, alias string) (Plan, *expression.Schema, error) {
	return nil, nil, nil
}

func buildSetOpr(c *Context, x *ast.SetOprStmt) (*Query, error) {
	return nil, errno.New(errno.ErNotSupportedYet, "UNION is not supported yet")
}
