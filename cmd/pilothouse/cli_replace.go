package main

import (
	"fmt"

	"github.com/pilothouse/pilothouse/pilotclient"
	"github.com/pilothouse/pilothouse/rules"
)

// replaceHint is how the command line replaces an installed rule: the
// server's words name the MCP input (input.install.replace).
const replaceHint = "pilothouse apply replaces it only with --replace (otherwise nothing is installed); to keep both, give the program another name"

// ruleExists is apply's answer to rule_exists in the command line's
// words: what is installed, what replacing it would undo, and --replace.
func ruleExists(r *pilotclient.ExecuteResult) error {
	rep := r.Replaces
	msg := fmt.Sprintf("run %s: %s: a rule named %q is installed (program %s, input %s, by %s)",
		r.RunID, rules.StatusRuleExists, rep.Rule, rep.ProgramRef, compact(rep.Input), rep.Principal)
	if rep.RunsInProgress > 0 {
		msg += "; replacing it would cancel its " + rules.Plural(rep.RunsInProgress, "run", "") + " in progress"
	}
	return fmt.Errorf("%s. Nothing was installed: run the same pilothouse apply with --replace to replace it, or give the program another name to keep both", msg)
}
