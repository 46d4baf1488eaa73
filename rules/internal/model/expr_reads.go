package model

import (
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
)

// maxReads bounds what one trace entry records as read: the paths one
// expression keeps and the values one entry holds (each value cut like a
// summary output, to about TruncateOver bytes).
const MaxReads = 12

// readPath is a variable path an expression names with constant keys, or
// the clock (root "now").
type readPath struct {
	Text string   // as shown: "trigger.to"
	Root string   // trigger, params, vars or steps
	keys []string // the members below root
}

// collectPaths finds the longest constant member paths below the
// environment's variables, at most maxReads (more count in omitted).
func collectPaths(root ast.Node) (paths []readPath, omitted int) {
	ast.Find(root, func(n ast.Node) bool {
		ok := false
		var p readPath
		switch n := n.(type) {
		case *ast.MemberNode:
			if p, ok = memberPath(n); !ok {
				return false
			}
		case *ast.CallNode:
			if id, isID := n.Callee.(*ast.IdentifierNode); !isID || id.Value != "now" {
				return false
			}
			p = readPath{Text: "now()", Root: "now"}
		default:
			return false
		}
		if coveredBy(paths, p) {
			return false
		}
		// The walk is post-order: vars.a comes before vars.a.b.
		if j := slices.IndexFunc(paths, func(q readPath) bool { return coveredBy([]readPath{p}, q) }); j >= 0 {
			paths[j] = p
			return false
		}
		if len(paths) == MaxReads {
			omitted++
			return false
		}
		paths = append(paths, p)
		return false
	})
	return paths, omitted
}

// memberPath flattens a.b.c (or a["b"]) rooted at an environment variable.
func memberPath(m *ast.MemberNode) (readPath, bool) {
	var keys []string
	var n ast.Node = m
	for {
		mm, ok := n.(*ast.MemberNode)
		if !ok {
			break
		}
		s, ok := mm.Property.(*ast.StringNode)
		if !ok {
			return readPath{}, false
		}
		keys = append(keys, s.Value)
		n = mm.Node
	}
	id, ok := n.(*ast.IdentifierNode)
	if !ok || reachNames[id.Value] == 0 {
		return readPath{}, false
	}
	for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
		keys[i], keys[j] = keys[j], keys[i]
	}
	return readPath{Text: id.Value + "." + strings.Join(keys, "."), Root: id.Value, keys: keys}, true
}

// coveredBy reports whether p is one of paths or a prefix of one.
func coveredBy(paths []readPath, p readPath) bool {
	for _, q := range paths {
		if q.Root == p.Root && len(q.keys) >= len(p.keys) && strings.Join(q.keys[:len(p.keys)], ".") == strings.Join(p.keys, ".") {
			return true
		}
	}
	return false
}

// readPath follows p through the run's maps (nil when a member is absent).
func (e *Env) ReadPath(p readPath) any {
	var v any
	keys := p.keys
	switch p.Root {
	case "trigger":
		v = e.TriggerMap()
	case "params":
		v = e.Params
	case "vars":
		v = e.Vars
	case "steps":
		out, ok := e.stepOutput(keys[0])
		if !ok {
			return nil
		}
		v, keys = map[string]any{"output": out}, keys[1:]
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// stepOutput is steps.<id>.output, pending or written through.
func (e *Env) stepOutput(id string) (any, bool) {
	if e.stepsLive {
		m, ok := e.Steps[id].(map[string]any)
		if !ok {
			return nil, false
		}
		return m["output"], true
	}
	for i := len(e.pend) - 1; i >= 0; i-- {
		if e.pend[i].id == id {
			return e.pend[i].out, true
		}
	}
	return nil, false
}
