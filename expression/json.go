package expression

import (
	"errors"
	"strings"

	"github.com/basalt-db/basalt/errno"
	"github.com/basalt-db/basalt/types"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// The JSON functions. A JSON value travels as a string datum of collation
// CollationJSON holding its normal text (see types.JSON); col->'$.p' is
// JSON_EXTRACT and col->>'$.p' JSON_UNQUOTE(JSON_EXTRACT(...)), as the
// parser rewrites them.

var typeJSON = types.FieldType{Tp: mysql.TypeJSON, Flen: 4294967295, Charset: "utf8mb4", Collate: "utf8mb4_bin", Flag: mysql.BinaryFlag}

// ToJSON converts a value stored into a JSON column or given to CAST(...
// AS JSON): JSON as it is, strings parsed as JSON text, other values as
// the JSON scalar they read as.
func ToJSON(d types.Datum) (types.JSON, error) {
	if d.Kind() == types.KindString {
		return types.ParseJSON(d.Bytes())
	}
	return jsonValue(d, false), nil
}

// jsonValue is the JSON a function argument that is a value (not a
// document) stands for: strings as JSON strings, booleans as true and
// false.
func jsonValue(d types.Datum, boolean bool) types.JSON {
	switch d.Kind() {
	case types.KindNull:
		return types.JSON{Kind: types.JSONNull}
	case types.KindInt:
		if boolean {
			return types.JSON{Kind: types.JSONBool, B: d.Int() != 0}
		}
		return types.JSON{Kind: types.JSONInt, I: d.Int()}
	case types.KindUint:
		return types.JSON{Kind: types.JSONUint, U: d.Uint()}
	case types.KindFloat, types.KindDecimal:
		f, _ := types.ToFloat(d)
		return types.JSON{Kind: types.JSONDouble, F: f}
	case types.KindString:
		if d.IsJSON() {
			if j, err := types.ParseJSON(d.Bytes()); err == nil {
				return j
			}
		}
	}
	return types.JSON{Kind: types.JSONString, S: string(types.ToText(d))}
}

func isBoolType(tp types.FieldType) bool { return tp.Flag&mysql.IsBooleanFlag != 0 }

// jsonDoc parses a function's document argument (argument n, 1-based).
func jsonDoc(d types.Datum, n int, fn string) (types.JSON, error) {
	if d.Kind() != types.KindString && !d.IsEnumOrSet() {
		return jsonValue(d, false), nil
	}
	j, err := types.ParseJSON(d.Bytes())
	if err != nil {
		var se *types.JSONSyntaxError
		msg, pos := "The document is empty.", 0
		if errors.As(err, &se) {
			msg, pos = se.Msg, se.Pos
		}
		return j, errno.New(errno.ErInvalidJSONTextInParam, "Invalid JSON text in argument %d to function %s: \"%s\" at position %d.", n, fn, msg, pos)
	}
	return j, nil
}

// jsonAt narrows doc to the first value at the path in v[i], when the call
// has that argument; ok is false when the path finds nothing (SQL NULL).
func jsonAt(doc types.JSON, v []types.Datum, i int, fn string) (types.JSON, bool, error) {
	if len(v) <= i {
		return doc, true, nil
	}
	p, err := jsonPath(v[i], fn)
	if err != nil {
		return doc, false, err
	}
	found := doc.Extract(p)
	if len(found) == 0 {
		return doc, false, nil
	}
	return found[0], true, nil
}

func jsonPath(d types.Datum, fn string) (types.JSONPath, error) {
	s := string(types.ToText(d))
	p, err := types.ParseJSONPath(s)
	if err != nil {
		return p, errno.New(errno.ErInvalidJSONPath, "Invalid JSON path expression. The error is around character position %d.", len(s))
	}
	return p, nil
}

func jsonResult(j types.JSON) (types.Datum, error) { return types.JSONDatum(j), nil }

// jsonBuiltins are the JSON functions. Most are NULL when a document or
// path argument is NULL; JSON_OBJECT, JSON_ARRAY and JSON_QUOTE are not.
func jsonBuiltins() map[string]builtin {
	fixedJSON := fixed(typeJSON)
	extract := func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
		doc, err := jsonDoc(v[0], 1, "json_extract")
		if err != nil {
			return types.Null, err
		}
		var found []types.JSON
		wrap := len(v) > 2
		for _, pv := range v[1:] {
			p, err := jsonPath(pv, "json_extract")
			if err != nil {
				return types.Null, err
			}
			wrap = wrap || p.HasWildcard()
			found = append(found, doc.Extract(p)...)
		}
		switch {
		case len(found) == 0:
			return types.Null, nil
		case !wrap:
			return jsonResult(found[0])
		}
		return jsonResult(types.JSON{Kind: types.JSONArray, Arr: found})
	}
	modify := func(name string, mode types.JSONSetMode) builtin {
		return builtin{minArgs: 3, maxArgs: -1, tp: fixedJSON, mk: func(args []Expr) fnType {
			return func(ctx *Ctx, v []types.Datum) (types.Datum, error) {
				if len(v)%2 != 1 {
					return types.Null, errno.New(errno.ErWrongParamcountToFunc, "Incorrect parameter count in the call to native function '%s'", name)
				}
				if v[0].IsNull() {
					return types.Null, nil
				}
				doc, err := jsonDoc(v[0], 1, name)
				if err != nil {
					return types.Null, err
				}
				for i := 1; i+1 < len(v); i += 2 {
					if v[i].IsNull() {
						return types.Null, nil
					}
					p, err := jsonPath(v[i], name)
					if err != nil {
						return types.Null, err
					}
					if p.HasWildcard() {
						return types.Null, errno.New(errno.ErInvalidJSONPathWildcard, "In this situation, path expressions may not contain the * and ** tokens or an array range.")
					}
					doc = doc.SetPath(p, jsonValue(v[i+1], isBoolType(args[i+1].Type())), mode)
				}
				return jsonResult(doc)
			}
		}, nullSafe: true}
	}
	return map[string]builtin{
		"json_extract": {minArgs: 2, maxArgs: -1, tp: fixedJSON, fn: extract},
		"json_unquote": {minArgs: 1, maxArgs: 1, tp: fixed(typeLongText), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			b := types.ToText(v[0])
			if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
				j, err := types.ParseJSON(b)
				if err != nil {
					return types.Null, errno.New(errno.ErInvalidJSONTextInParam, "Invalid JSON text in argument 1 to function json_unquote: \"%s\" at position 0.", err.Error())
				}
				return types.NewString(j.S), nil
			}
			if v[0].IsJSON() {
				return types.NewBytes(b), nil
			}
			return types.NewBytes(b), nil
		}},
		"json_quote": {minArgs: 1, maxArgs: 1, tp: fixed(typeLongText), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			return types.NewBytes(types.AppendJSONString(nil, string(types.ToText(v[0])))), nil
		}},
		"json_object": {maxArgs: -1, tp: fixedJSON, nullSafe: true, mk: func(args []Expr) fnType {
			return func(_ *Ctx, v []types.Datum) (types.Datum, error) {
				if len(v)%2 != 0 {
					return types.Null, errno.New(errno.ErWrongParamcountToFunc, "Incorrect parameter count in the call to native function 'json_object'")
				}
				obj := types.NewJSONObject()
				for i := 0; i < len(v); i += 2 {
					if v[i].IsNull() {
						return types.Null, errno.New(3158, "JSON documents may not contain NULL member names.")
					}
					obj = obj.Set(string(types.ToText(v[i])), jsonValue(v[i+1], isBoolType(args[i+1].Type())))
				}
				return jsonResult(obj)
			}
		}},
		"json_array": {maxArgs: -1, tp: fixedJSON, nullSafe: true, mk: func(args []Expr) fnType {
			return func(_ *Ctx, v []types.Datum) (types.Datum, error) {
				arr := types.JSON{Kind: types.JSONArray, Arr: []types.JSON{}}
				for i, d := range v {
					arr.Arr = append(arr.Arr, jsonValue(d, isBoolType(args[i].Type())))
				}
				return jsonResult(arr)
			}
		}},
		"json_contains": {minArgs: 2, maxArgs: 3, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_contains")
			if err != nil {
				return types.Null, err
			}
			cand, err := jsonDoc(v[1], 2, "json_contains")
			if err != nil {
				return types.Null, err
			}
			doc, ok, err := jsonAt(doc, v, 2, "json_contains")
			if err != nil || !ok {
				return types.Null, err
			}
			return types.NewBool(doc.Contains(cand)), nil
		}},
		"json_contains_path": {minArgs: 3, maxArgs: -1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_contains_path")
			if err != nil {
				return types.Null, err
			}
			one := strings.EqualFold(string(types.ToText(v[1])), "one")
			if !one && !strings.EqualFold(string(types.ToText(v[1])), "all") {
				return types.Null, errno.New(3150, "The oneOrAll argument to json_contains_path may take these values: 'one' or 'all'.")
			}
			for _, pv := range v[2:] {
				p, err := jsonPath(pv, "json_contains_path")
				if err != nil {
					return types.Null, err
				}
				has := len(doc.Extract(p)) > 0
				if one && has {
					return types.NewInt(1), nil
				}
				if !one && !has {
					return types.NewInt(0), nil
				}
			}
			return types.NewBool(!one), nil
		}},
		"json_length": {minArgs: 1, maxArgs: 2, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_length")
			if err != nil {
				return types.Null, err
			}
			doc, ok, err := jsonAt(doc, v, 1, "json_length")
			if err != nil || !ok {
				return types.Null, err
			}
			switch doc.Kind {
			case types.JSONArray:
				return types.NewInt(int64(len(doc.Arr))), nil
			case types.JSONObject:
				return types.NewInt(int64(len(doc.Keys))), nil
			}
			return types.NewInt(1), nil
		}},
		"json_depth": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_depth")
			if err != nil {
				return types.Null, err
			}
			return types.NewInt(int64(doc.Depth())), nil
		}},
		"json_keys": {minArgs: 1, maxArgs: 2, tp: fixedJSON, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_keys")
			if err != nil {
				return types.Null, err
			}
			doc, ok, err := jsonAt(doc, v, 1, "json_keys")
			if err != nil || !ok {
				return types.Null, err
			}
			if doc.Kind != types.JSONObject {
				return types.Null, nil
			}
			arr := types.JSON{Kind: types.JSONArray, Arr: []types.JSON{}}
			for _, k := range doc.Keys {
				arr.Arr = append(arr.Arr, types.JSON{Kind: types.JSONString, S: k})
			}
			return jsonResult(arr)
		}},
		"json_set":     modify("json_set", types.JSONSetAny),
		"json_insert":  modify("json_insert", types.JSONSetInsert),
		"json_replace": modify("json_replace", types.JSONSetReplace),
		"json_remove": {minArgs: 2, maxArgs: -1, tp: fixedJSON, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_remove")
			if err != nil {
				return types.Null, err
			}
			for _, pv := range v[1:] {
				p, err := jsonPath(pv, "json_remove")
				if err != nil {
					return types.Null, err
				}
				if p.HasWildcard() || p.IsRoot() {
					return types.Null, errno.New(errno.ErInvalidJSONPathWildcard, "In this situation, path expressions may not contain the * and ** tokens or an array range.")
				}
				doc = doc.RemovePath(p)
			}
			return jsonResult(doc)
		}},
		"json_array_append": {minArgs: 3, maxArgs: -1, tp: fixedJSON, mk: func(args []Expr) fnType {
			return func(_ *Ctx, v []types.Datum) (types.Datum, error) {
				doc, err := jsonDoc(v[0], 1, "json_array_append")
				if err != nil {
					return types.Null, err
				}
				for i := 1; i+1 < len(v); i += 2 {
					p, err := jsonPath(v[i], "json_array_append")
					if err != nil {
						return types.Null, err
					}
					found := doc.Extract(p)
					if len(found) == 0 {
						continue
					}
					cur := found[0]
					arr := append(append([]types.JSON(nil), jsonAsArray(cur)...), jsonValue(v[i+1], isBoolType(args[i+1].Type())))
					doc = doc.SetPath(p, types.JSON{Kind: types.JSONArray, Arr: arr}, types.JSONSetAny)
				}
				return jsonResult(doc)
			}
		}},
		"json_merge_patch": {minArgs: 2, maxArgs: -1, tp: fixedJSON, fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_merge_patch")
			if err != nil {
				return types.Null, err
			}
			for i, d := range v[1:] {
				p, err := jsonDoc(d, i+2, "json_merge_patch")
				if err != nil {
					return types.Null, err
				}
				doc = doc.MergePatch(p)
			}
			return jsonResult(doc)
		}},
		"json_merge_preserve": {minArgs: 2, maxArgs: -1, tp: fixedJSON, fn: mergePreserve},
		"json_merge":          {minArgs: 2, maxArgs: -1, tp: fixedJSON, fn: mergePreserve},
		"json_type": {minArgs: 1, maxArgs: 1, tp: fixed(stringType(16, types.CollationGeneralCI)), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			doc, err := jsonDoc(v[0], 1, "json_type")
			if err != nil {
				return types.Null, err
			}
			return types.NewString(doc.TypeName()), nil
		}},
		"json_valid": {minArgs: 1, maxArgs: 1, tp: fixed(typeInt), fn: func(_ *Ctx, v []types.Datum) (types.Datum, error) {
			if v[0].Kind() != types.KindString {
				return types.NewInt(0), nil
			}
			_, err := types.ParseJSON(v[0].Bytes())
			return types.NewBool(err == nil), nil
		}},
	}
}

func mergePreserve(_ *Ctx, v []types.Datum) (types.Datum, error) {
	doc, err := jsonDoc(v[0], 1, "json_merge_preserve")
	if err != nil {
		return types.Null, err
	}
	for i, d := range v[1:] {
		o, err := jsonDoc(d, i+2, "json_merge_preserve")
		if err != nil {
			return types.Null, err
		}
		doc = doc.MergePreserve(o)
	}
	return jsonResult(doc)
}

func jsonAsArray(j types.JSON) []types.JSON {
	if j.Kind == types.JSONArray {
		return j.Arr
	}
	return []types.JSON{j}
}
