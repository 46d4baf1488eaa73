// Package rulefile reads a rule file for apply and test: JSON, or YAML
// (.yaml, .yml) turned into the same JSON, bounded in bytes and nodes.
package rulefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxBytes bounds what apply and test read of a rule file, JSON or
// YAML (the server's own bound, limits.max_program_bytes, is 256 KiB by
// default; a YAML file may carry comments beside it).
const MaxBytes = 1 << 20

// maxYAMLNodes bounds the YAML nodes a rule file is turned from.
const maxYAMLNodes = 100_000

// Read reads a rule file, at most MaxBytes bytes.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s: more than %d bytes: not a rule file", path, MaxBytes)
	}
	return b, nil
}

// IsYAML says whether a rule file is written in YAML (by its name).
func IsYAML(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".yaml" || ext == ".yml"
}

// FromYAML turns a YAML rule file into the same program as JSON: one
// document, a mapping, string keys, no anchors or aliases. Errors are
// located path:line:column (path:line for a YAML syntax error, which
// yaml.v3 locates by its line only).
func FromYAML(path string, b []byte) (json.RawMessage, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty: want a rule (a YAML mapping with name, triggers, steps …)", path)
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		return nil, fmt.Errorf("%s:%d:%d: a second YAML document: want one rule per file", path, more.Line, more.Column)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d:%d: want a YAML mapping (a rule: name, triggers, steps …), found %s", path, root.Line, root.Column, nodeKind(root))
	}
	y := yamlJSON{path: path}
	v, err := y.value(root)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// yamlJSON turns YAML nodes into JSON values, counting them.
type yamlJSON struct {
	path  string
	nodes int
}

func (y *yamlJSON) errAt(n *yaml.Node, format string, a ...any) error {
	return fmt.Errorf("%s:%d:%d: %s", y.path, n.Line, n.Column, fmt.Sprintf(format, a...))
}

func (y *yamlJSON) value(n *yaml.Node) (any, error) {
	if y.nodes++; y.nodes > maxYAMLNodes {
		return nil, y.errAt(n, "more than %d YAML nodes", maxYAMLNodes)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return nil, y.errAt(k, "want a plain key (a name), found %s", nodeKind(k))
			}
			if _, dup := m[k.Value]; dup {
				return nil, y.errAt(k, "key %q given twice", k.Value)
			}
			val, err := y.value(v)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := y.value(c)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, y.errAt(n, "%v", err)
		}
		return v, nil
	}
	return nil, y.errAt(n, "%s: anchors and aliases are not taken in rule files; write the value out", nodeKind(n))
}

// nodeKind names a YAML node's kind as a person reads it.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias (*" + n.Value + ")"
	case yaml.ScalarNode:
		if n.Tag == "!!merge" {
			return "a merge key (<<)"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// yamlLine is how yaml.v3 places its syntax errors ("line N: …").
var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// Program reads the rule file at path: JSON as it is (its errors located
// path:line:column), YAML turned into the same JSON.
func Program(path string) (json.RawMessage, error) {
	b, err := Read(path)
	if err != nil {
		return nil, err
	}
	if IsYAML(path) {
		return FromYAML(path, b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, jsonError(path, b, err)
	}
	return json.RawMessage(b), nil
}
