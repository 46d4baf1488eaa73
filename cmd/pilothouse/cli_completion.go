package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// completionShells are the shells pilothouse completion writes for.
var completionShells = []string{"bash", "zsh", "fish"}

// runCompletion prints the completion script of a shell, made from the
// command table.
func runCompletion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("completion", stderr)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || !slices.Contains(completionShells, pos[0]) {
		return errors.New("usage: pilothouse completion bash|zsh|fish\n" +
			"  bash: source <(pilothouse completion bash)     (or save it in ~/.local/share/bash-completion/completions/pilothouse)\n" +
			"  zsh:  source <(pilothouse completion zsh)      (after compinit; or save it as _pilothouse in your $fpath)\n" +
			"  fish: pilothouse completion fish > ~/.config/fish/completions/pilothouse.fish")
	}
	switch pos[0] {
	case "bash":
		_, err = io.WriteString(stdout, bashCompletion())
	case "zsh":
		_, err = io.WriteString(stdout, zshCompletion())
	default:
		_, err = io.WriteString(stdout, fishCompletion())
	}
	return err
}

// completionFlag is one flag as the completions offer it.
type completionFlag struct{ name, usage string }

func (c command) completionFlags() []completionFlag {
	if c.flagSet == nil {
		return nil
	}
	var out []completionFlag
	c.flagSet().VisitAll(func(f *flag.Flag) {
		out = append(out, completionFlag{f.Name, firstClause(f.Usage)})
	})
	return out
}

// firstClause shortens a flag's usage to its first clause, for a
// completion menu.
func firstClause(s string) string {
	if i := strings.IndexAny(s, "(;:"); i > 0 {
		s = s[:i]
	}
	if len(s) > 70 {
		s = s[:70]
	}
	return strings.TrimSpace(s)
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(names, " ")
}

func flagWords(c command) string {
	var words []string
	for _, f := range c.completionFlags() {
		words = append(words, "--"+f.name)
	}
	return strings.Join(words, " ")
}

func bashCompletion() string {
	var b strings.Builder
	b.WriteString("# bash completion for pilothouse (pilothouse completion bash)\n_pilothouse() {\n")
	b.WriteString("\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" verbs=\"\" flags=\"\"\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W \"%s --version -h\" -- \"$cur\"))\n\t\treturn\n\tfi\n", commandNames())
	b.WriteString("\tcase \"${COMP_WORDS[1]}\" in\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "\t%s) verbs=\"%s\" flags=\"%s\" ;;\n", c.name, strings.Join(c.verbs, " "), flagWords(c))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$flags -h\" -- \"$cur\"))\n")
	b.WriteString("\telif [ \"$COMP_CWORD\" -eq 2 ] && [ -n \"$verbs\" ]; then\n\t\tCOMPREPLY=($(compgen -W \"$verbs\" -- \"$cur\"))\n\tfi\n}\n")
	b.WriteString("complete -o default -F _pilothouse pilothouse\n")
	return b.String()
}

func zshCompletion() string {
	var b strings.Builder
	b.WriteString("#compdef pilothouse\n# zsh completion for pilothouse (pilothouse completion zsh)\n_pilothouse() {\n\tlocal -a verbs flags\n")
	fmt.Fprintf(&b, "\tif (( CURRENT == 2 )); then\n\t\tcompadd -- %s --version -h\n\t\treturn\n\tfi\n", commandNames())
	b.WriteString("\tcase ${words[2]} in\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "\t%s) verbs=(%s); flags=(%s) ;;\n", c.name, strings.Join(c.verbs, " "), flagWords(c))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ ${words[CURRENT]} == -* ]]; then\n\t\tcompadd -- $flags -h\n")
	b.WriteString("\telif (( CURRENT == 3 && ${#verbs} )); then\n\t\tcompadd -- $verbs\n\telse\n\t\t_files\n\tfi\n}\n")
	b.WriteString("if [ \"$funcstack[1]\" = \"_pilothouse\" ]; then\n\t_pilothouse \"$@\"\nelse\n\tcompdef _pilothouse pilothouse\nfi\n")
	return b.String()
}

func fishCompletion() string {
	var b strings.Builder
	b.WriteString("# fish completion for pilothouse (pilothouse completion fish)\ncomplete -c pilothouse -f\n")
	b.WriteString("complete -c pilothouse -n __fish_use_subcommand -l version -d 'print the version'\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "complete -c pilothouse -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(firstClause(c.summary)))
	}
	for _, c := range commands {
		cond := fishQuote("__fish_seen_subcommand_from " + c.name)
		if len(c.verbs) > 0 {
			fmt.Fprintf(&b, "complete -c pilothouse -n %s -a %s\n", cond, fishQuote(strings.Join(c.verbs, " ")))
		}
		for _, f := range c.completionFlags() {
			fmt.Fprintf(&b, "complete -c pilothouse -n %s -l %s -d %s\n", cond, f.name, fishQuote(f.usage))
		}
		if c.name == "apply" || c.name == "test" {
			fmt.Fprintf(&b, "complete -c pilothouse -n %s -F\n", cond) // a rule file
		}
	}
	return b.String()
}

// fishQuote quotes s for fish: single quotes, with \ and ' escaped.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
