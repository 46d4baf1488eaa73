package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// instanceName is the rule a deploy of c with params installs. A program
// installs as the rule of its name; the same program (same program_ref)
// deployed for another input — the reusable motion light for a second
// room — becomes a second rule instead of silently replacing the first:
// "<name>-<its input>" (the devices and values it binds, e.g.
// motion-light-porch_light), or with a short hash when that is taken.
// A changed program under its name replaces the rule only when the input
// asks for it (install.replace; see replaceCheck); install.rule names the
// rule instead of all this.
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

// installOpts is execute input's reserved member "install": the rule a
// deploy installs (default: see instanceName) and whether it may replace
// an installed rule of that name that runs another program or input.
type installOpts struct {
	Rule    string
	Replace bool
}

// installOf takes the reserved member "install" out of params and checks
// it; only a deploy takes it.
func installOf(params map[string]any, deploy bool) (map[string]any, installOpts, []pilotage.Diagnostic) {
	var o installOpts
	v, ok := params[rules.InstallInputMember]
	if !ok {
		return params, o, nil
	}
	at := "/" + rules.InstallInputMember
	bad := func(path, msg string) (map[string]any, installOpts, []pilotage.Diagnostic) {
		return nil, o, []pilotage.Diagnostic{inputDiag(path, msg)}
	}
	if !deploy {
		return bad(at, "install is only accepted by a deploy (execute without test_run)")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return bad(at, `install must be an object: {"rule": "<rule name>", "replace": true}`)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch x := obj[k]; k {
		case "rule":
			s, ok := x.(string)
			if !ok || !rules.ValidName(s) {
				return bad(at+"/rule", "install.rule must be a rule name: 1-64 of A-Z a-z 0-9 _ - ., starting with a letter or digit")
			}
			o.Rule = s
		case "replace":
			b, ok := x.(bool)
			if !ok {
				return bad(at+"/replace", "install.replace must be true or false")
			}
			o.Replace = b
		default:
			return bad(at, "install takes only rule and replace, not "+quote(k))
		}
	}
	rest := make(map[string]any, len(params)-1)
	for k, x := range params {
		if k != rules.InstallInputMember {
			rest[k] = x
		}
	}
	return rest, o, nil
}
