package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/rules"
)

// instanceName is the rule a deploy of c with params installs. A program
// installs as the rule of its name; the same program (same program_ref)
// deployed for another input — the reusable motion light for a second
// room — becomes a second rule instead of silently replacing the first:
// "<name>-<its input>" (the devices and values it binds, e.g.
// motion-light-porch_light), or with a short hash when that is taken.
// A changed program under its name still replaces the rule (its answer
// says what it replaced and the runs it cancelled).
func (e *Engine) instanceName(ctx context.Context, p *Principal, c *rules.Compiled, params map[string]any) string {
	base := c.Name()
	pj, _ := json.Marshal(params)
	old, err := e.store.GetRule(ctx, base)
	if err != nil || old.Ref != programRef(c) || old.Principal != p.Name || string(paramsKey(old.Params)) == string(paramsKey(pj)) {
		return base
	}
	sum := sha256.Sum256(paramsKey(pj))
	for _, name := range []string{base + "-" + inputWords(params), base + "-" + hex.EncodeToString(sum[:3])} {
		r, err := e.store.GetRule(ctx, name)
		if err != nil || r.Ref == old.Ref && r.Principal == p.Name && string(paramsKey(r.Params)) == string(paramsKey(pj)) {
			return name // free, or this very instance (unchanged)
		}
	}
	return base + "-" + hex.EncodeToString(sum[:8])
}

// maxInputWords bounds the part of an instance name taken from its input.
const maxInputWords = 48

// inputWords names an input by its values: catalog ids by their device,
// other strings and numbers as written, in key order, as name characters.
func inputWords(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var words []string
	for _, k := range keys {
		var w string
		switch v := params[k].(type) {
		case string:
			w = deviceOf(v)
		case float64, int, bool:
			b, _ := json.Marshal(v)
			w = string(b)
		}
		if w = nameChars(w); w != "" {
			words = append(words, w)
		}
	}
	out := strings.Join(words, "-")
	if len(out) > maxInputWords {
		out = strings.TrimRight(out[:maxInputWords], "-")
	}
	if out == "" {
		out = "copy"
	}
	return out
}

// nameChars keeps the characters a rule name may hold.
func nameChars(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case r == '.' || r == ' ':
			return '-'
		}
		return -1
	}, s)
}
