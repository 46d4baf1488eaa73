package main

import (
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// itemList is one list of mappings in the file: its items share one
// closed set of keys, and one of those keys names each item uniquely.
type itemList[T any] struct {
	what  string // the items, as "want a list of <what>" names them
	idKey string // the key naming an item
	noun  string // an item, as "<noun> %q is defined twice" names it
	// required: an item without idKey is refused (else its valid does).
	required bool
	item     func() listItem[T]
}

// listItem is one item being decoded.
type listItem[T any] struct {
	keys  map[string]handler // the item's closed set of keys
	id    *string            // where keys decode the item's id to
	valid func() error       // the item's own checks, before its id's; nil: none
	// done checks the decoded item after its id and returns it completed.
	done func(it *yaml.Node, k string) (T, error)
}

// decodeList decodes a list into *dst (replacing it when the whole list
// is good), locating each error to its item (key[i]).
func decodeList[T any](l *cfgLoader, n *yaml.Node, key string, dst *[]T, spec itemList[T]) error {
	if n.Kind != yaml.SequenceNode {
		return l.errAt(n, key, "want a list of %s, got %s", spec.what, describe(n))
	}
	out := []T{}
	ids := map[string]bool{}
	for i, it := range n.Content {
		it = deref(it)
		k := fmt.Sprintf("%s[%d]", key, i)
		item := spec.item()
		if err := l.mapping(it, k, item.keys); err != nil {
			return err
		}
		if item.valid != nil {
			if err := item.valid(); err != nil {
				return l.errAt(it, k, "%v", err)
			}
		}
		switch id := *item.id; {
		case id == "" && spec.required:
			return l.errAt(it, k, "%s is required", spec.idKey)
		case ids[id]:
			return l.errAt(it, k+"."+spec.idKey, "%s %q is defined twice", spec.noun, id)
		}
		v, err := item.done(it, k)
		if err != nil {
			return err
		}
		ids[*item.id] = true
		out = append(out, v)
	}
	*dst = out
	return nil
}

// oneOf counts how many of a closed set of keys an item sets.
type oneOf int

func (o *oneOf) of(h handler) handler {
	return func(n *yaml.Node, key string) error { *o++; return h(n, key) }
}

// principals replaces the principal list. Each principal has at most one
// of token_sha256, token_env and token (plaintext: accepted with a warning,
// kept only hashed).
func (l *cfgLoader) principals(n *yaml.Node, key string) error {
	return decodeList(l, n, key, &l.c.Principals, itemList[*engine.Principal]{what: "principals", idKey: "name", noun: "principal",
		required: true, item: l.principal})
}

func (l *cfgLoader) principal() listItem[*engine.Principal] {
	p := &engine.Principal{}
	var hash, plain, env string
	var sources oneOf
	adminSet := false
	keys := map[string]handler{
		"name": l.checked(&p.Name, nonEmpty),
		"token_sha256": sources.of(l.checked(&hash, func(s string) error {
			if b, err := hex.DecodeString(s); err != nil || len(b) != 32 {
				return fmt.Errorf("want 64 hex digits (sha256sum of the token)")
			}
			return nil
		})),
		"token": sources.of(l.checked(&plain, checkToken)),
		"token_env": sources.of(func(n *yaml.Node, key string) error {
			if err := l.fromEnv(&env)(n, key); err != nil {
				return err
			}
			if err := checkToken(env); err != nil {
				return l.errAt(n, key, "the token in environment variable %s: %s", n.Value, err)
			}
			return nil
		}),
		"deploy":   l.boolean(&p.Deploy),
		"admin":    func(n *yaml.Node, key string) error { adminSet = true; return l.boolean(&p.Admin)(n, key) },
		"scope":    func(n *yaml.Node, key string) error { return l.scope(n, key, &p.Scope) },
		"approver": l.boolean(&p.Approver),
		"approval": l.ownApprovalPolicy(p),
	}
	return listItem[*engine.Principal]{keys: keys, id: &p.Name, done: func(it *yaml.Node, k string) (*engine.Principal, error) {
		if sources > 1 {
			return nil, l.errAt(it, k, "set one of token_sha256, token_env and token")
		}
		if !adminSet {
			p.Admin = p.Name == engine.Owner.Name // the owner sees the whole house unless told otherwise
		}
		l.setToken(p, hash, env, plain, it, k)
		return p, nil
	}}
}

// setToken keeps the hash of the principal's one token source, warning
// about a plaintext token.
func (l *cfgLoader) setToken(p *engine.Principal, hash, env, plain string, it *yaml.Node, k string) {
	switch {
	case hash != "":
		p.TokenHash = strings.ToLower(hash)
	case env != "":
		p.TokenHash = engine.HashToken(env)
	case plain != "":
		p.TokenHash = engine.HashToken(plain)
		if l.warn != nil {
			fmt.Fprintf(l.warn, "config %s:%d:%d: warning: %s.token is a plaintext secret; prefer token_sha256 (%s) or token_env\n",
				l.file, it.Line, it.Column, k, p.TokenHash)
		}
	}
}

func (l *cfgLoader) scope(n *yaml.Node, key string, s *engine.Scope) error {
	var kinds, risks []string
	err := l.mapping(n, key, map[string]handler{
		"areas":         l.strList(&s.Areas, nonEmpty),
		"allow_no_area": l.boolean(&s.AllowNoArea),
		"devices":       l.strList(&s.Devices, checkPattern),
		"deny_devices":  l.strList(&s.DenyDevices, checkPattern),
		"kinds": l.strList(&kinds, func(v string) error {
			for _, k := range pilotage.Kinds {
				if string(k.Kind) == v {
					return nil
				}
			}
			return fmt.Errorf("unknown kind %q (device, state, event, action, automation)", v)
		}),
		"deny_types": l.strList(&s.DenyTypes, nonEmpty),
		"deny_risks": l.strList(&risks, func(v string) error {
			for _, r := range pilotage.RiskLevels {
				if string(r.Risk) == v {
					return nil
				}
			}
			return fmt.Errorf("unknown risk %q (read, control, security, external)", v)
		}),
	})
	for _, k := range kinds {
		s.Kinds = append(s.Kinds, pilotage.Kind(k))
	}
	for _, r := range risks {
		s.DenyRisks = append(s.DenyRisks, pilotage.Risk(r))
	}
	return err
}

func checkPattern(p string) error {
	if _, err := path.Match(p, ""); err != nil || p == "" {
		return fmt.Errorf("bad device pattern %q", p)
	}
	return nil
}

// notify replaces the notification channels.
func (l *cfgLoader) notify(n *yaml.Node, key string) error {
	return decodeList(l, n, key, &l.c.Notify, itemList[devices.NotifyChannel]{what: "channels", idKey: "id", noun: "channel",
		required: true, item: l.notifyChannel})
}

func (l *cfgLoader) notifyChannel() listItem[devices.NotifyChannel] {
	var ch devices.NotifyChannel
	keys := map[string]handler{
		"id": l.checked(&ch.ID, func(s string) error {
			if !strings.HasPrefix(s, "notify.") || len(s) == len("notify.") || strings.ContainsAny(s, " /#+") {
				return fmt.Errorf("want an id such as \"notify.phone\", got %q", s)
			}
			return nil
		}),
		"name":     l.str(&ch.Name),
		"topic":    l.checked(&ch.Topic, nonEmpty),
		"url":      l.checked(&ch.URL, httpURL),
		"ntfy":     l.checked(&ch.Ntfy, httpURL),
		"priority": l.checked(&ch.Priority, ntfyPriority),
		"tags":     l.strList(&ch.Tags, nonEmpty),
	}
	return listItem[devices.NotifyChannel]{keys: keys, id: &ch.ID, done: func(it *yaml.Node, k string) (devices.NotifyChannel, error) {
		switch {
		case countSet(ch.Topic, ch.URL, ch.Ntfy) != 1:
			return ch, l.errAt(it, k, "set exactly one of topic, url and ntfy")
		case ch.Ntfy == "" && (ch.Priority != "" || len(ch.Tags) > 0):
			return ch, l.errAt(it, k, "priority and tags are for an ntfy channel")
		}
		return ch, nil
	}}
}

func httpURL(s string) error {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return fmt.Errorf("want an http(s) URL, got %q", s)
	}
	return nil
}

func ntfyPriority(s string) error {
	switch s {
	case "min", "low", "default", "high", "urgent":
		return nil
	}
	return fmt.Errorf("want min, low, default, high or urgent, got %q", s)
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// limits overrides rules.Limits field by field.
func (l *cfgLoader) limits(n *yaml.Node, key string) error {
	lim := &l.c.Limits
	return l.mapping(n, key, map[string]handler{
		"max_request_bytes": l.integer(&lim.MaxRequestBytes),
		"max_arg_bytes":     l.integer(&lim.MaxArgBytes),
		"max_input_bytes":   l.integer(&lim.MaxInputBytes),
		"max_program_bytes": l.integer(&lim.MaxProgramBytes),
		"max_nodes":         l.integer(&lim.MaxNodes),
		"max_depth":         l.integer(&lim.MaxDepth),
		"max_expr_nodes":    l.uinteger(&lim.MaxExprNodes),
		"max_expr_len":      l.integer(&lim.MaxExprLen),
		"validate_wall":     l.duration(&lim.ValidateWall),
		"max_steps":         l.integer(&lim.MaxSteps),
		"max_iterations":    l.integer(&lim.MaxIterations),
		"max_wall":          l.duration(&lim.MaxWall),
		"max_call_depth":    l.integer(&lim.MaxCallDepth),
		"memory_budget":     l.uinteger(&lim.MemoryBudget),
		"max_concurrent":    l.integer(&lim.MaxConcurrent),
		"max_set_values":    l.integer(&lim.MaxSetValues),
		"max_value_bytes":   l.integer(&lim.MaxValueBytes),
		"max_eval_bytes":    l.integer(&lim.MaxEvalBytes),
		"max_run_bytes":     l.integer(&lim.MaxRunBytes),
		"max_eval_ops":      l.integer(&lim.MaxEvalOps),
		"max_run_ops":       l.integer(&lim.MaxRunOps),
		"max_test_run_wall": l.duration(&lim.MaxTestRunWall),

		"max_connections":                l.integer(&lim.MaxConnections),
		"max_streams":                    l.integer(&lim.MaxStreams),
		"max_streams_per_principal":      l.integer(&lim.MaxStreamsPerPrincipal),
		"max_sessions":                   l.integer(&lim.MaxSessions),
		"max_sessions_per_principal":     l.integer(&lim.MaxSessionsPerPrincipal),
		"session_idle":                   l.duration(&lim.SessionIdle),
		"max_stored_test_runs":           l.integer(&lim.MaxStoredTestRuns),
		"max_served_run_bytes":           l.integer(&lim.MaxServedRunBytes),
		"max_stored_test_bytes":          l.integer(&lim.MaxStoredTestBytes),
		"max_stored_rule_bytes":          l.integer(&lim.MaxStoredRuleBytes),
		"max_stored_firing_bytes":        l.integer(&lim.MaxStoredFiringBytes),
		"max_rules_per_principal":        l.integer(&lim.MaxRulesPerPrincipal),
		"max_live_firings_per_principal": l.integer(&lim.MaxLiveFiringsPerPrincipal),
		"max_live_firings_admin":         l.integer(&lim.MaxLiveFiringsAdmin),
	})
}
