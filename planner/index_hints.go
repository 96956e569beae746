package planner

import (
	"strings"

	"github.com/basalt-db/basalt/catalog"
	"github.com/basalt-db/basalt/errno"
	"github.com/pingcap/tidb/pkg/parser/ast"
)

// Index hints restrict the keys a table's access path may read
// (access_path.go), from MySQL's USE / FORCE / IGNORE INDEX after a
// table name and TiDB's optimizer hints USE_INDEX, FORCE_INDEX and
// IGNORE_INDEX (/*+ USE_INDEX(t, k) */, naming the table by its alias or
// name):
//
//   - USE or FORCE INDEX (k1, k2): only those keys may be read; the table
//     is scanned in full when none of them applies. PRIMARY names the
//     primary key, the integer handle included. USE INDEX () reads no key.
//     FORCE also reads the key when statistics say a full scan would be
//     cheaper (MySQL takes a scan as very expensive under FORCE).
//   - IGNORE INDEX (k): those keys are not read.
//
// Several hints on one table add up. A key the table does not have is
// MySQL's error 1176. The FOR JOIN / ORDER BY / GROUP BY scopes are not
// told apart: the access path is the only choice they could steer.

// indexHints are one table's hints; nil: none.
type indexHints struct {
	only   map[string]bool // lower-case names USE / FORCE allow; nil: any
	ignore map[string]bool
	force  bool
}

// tableIndexHints gathers the hints on table t, named name (its alias, or
// its name) in the query, from its own index hints and the statement's
// optimizer hints.
func tableIndexHints(t *catalog.TableInfo, name string, own []*ast.IndexHint, opt []*ast.TableOptimizerHint) (*indexHints, error) {
	var h *indexHints
	add := func(kind ast.IndexHintType, names []ast.CIStr) error {
		if h == nil {
			h = &indexHints{}
		}
		for _, n := range names {
			if !hasKey(t, n.L) {
				return errno.New(errno.ErKeyDoesNotExist, "Key '%s' doesn't exist in table '%s'", n.O, t.Name)
			}
		}
		switch kind {
		case ast.HintUse, ast.HintForce:
			if h.only == nil {
				h.only = map[string]bool{}
			}
			for _, n := range names {
				h.only[n.L] = true
			}
			h.force = h.force || kind == ast.HintForce
		case ast.HintIgnore:
			if h.ignore == nil {
				h.ignore = map[string]bool{}
			}
			for _, n := range names {
				h.ignore[n.L] = true
			}
		}
		return nil
	}
	for _, ih := range own {
		if err := add(ih.HintType, ih.IndexNames); err != nil {
			return nil, err
		}
	}
	for _, oh := range opt {
		var kind ast.IndexHintType
		switch oh.HintName.L {
		case "use_index":
			kind = ast.HintUse
		case "force_index":
			kind = ast.HintForce
		case "ignore_index":
			kind = ast.HintIgnore
		default:
			continue
		}
		if len(oh.Tables) != 1 || !strings.EqualFold(oh.Tables[0].TableName.L, name) {
			continue
		}
		if len(oh.Indexes) == 0 && kind != ast.HintUse {
			continue
		}
		if err := add(kind, oh.Indexes); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// hasKey says whether t has a key named name (lower case), PRIMARY for
// its primary key.
func hasKey(t *catalog.TableInfo, name string) bool {
	for _, ix := range t.Indexes {
		if ix.State == catalog.StatePublic && (strings.EqualFold(ix.Name, name) || ix.Primary && name == "primary") {
			return true
		}
	}
	return false
}

// allows says whether the hints let the access path read ix.
func (h *indexHints) allows(ix *catalog.IndexInfo) bool {
	if h == nil {
		return true
	}
	name := strings.ToLower(ix.Name)
	if ix.Primary {
		name = "primary"
	}
	if h.ignore[name] {
		return false
	}
	return h.only == nil || h.only[name]
}

// allowsHandle says whether the access path may read by the integer
// primary key of t (the handle).
func (h *indexHints) allowsHandle(t *catalog.TableInfo) bool {
	if h == nil {
		return true
	}
	pk := t.PrimaryKey()
	return pk != nil && h.allows(pk)
}
