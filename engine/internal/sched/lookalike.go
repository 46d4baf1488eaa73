package sched

import (
	"log/slog"

	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/storage"
)

// warnLookAlikes logs the stored rules whose names a person cannot tell
// apart (installed before deploys refused them): both stay installed, and
// the owner learns which to rename.
func warnLookAlikes(log *slog.Logger, list []storage.Rule) {
	seen := make(map[string]string, len(list))
	for _, r := range list {
		f := shown.Fold(r.Name)
		if other, ok := seen[f]; ok {
			log.Warn("two installed rules have names a person cannot tell apart; both stay installed, rename one", "rule", r.Name, "looks_like", other)
			continue
		}
		seen[f] = r.Name
	}
}
