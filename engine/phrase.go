package engine

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// The phrasing the web pages share with plans and narrations (defined in
// rules/plan_phrase.go): the UI asks the engine, never rules directly.

// Plural is n with the noun in the number n needs ("1 minute", "2 devices").
func Plural(n int, one, many string) string { return rules.Plural(n, one, many) }

// JoinList joins items the way a sentence lists them ("a, b and c").
func JoinList(items []string, conj string) string { return rules.JoinList(items, conj) }

// OutcomeSentence says how a run ended: "The run succeeded." or "The run
// failed: <reason>."
func OutcomeSentence(o pilotage.Outcome) string { return rules.OutcomeSentence(o.Status, o.Error) }
