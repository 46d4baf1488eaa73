package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// The logbook's shares of its rows, each trimmed on its own: what the
// devices report (the bus's events and availability, and the helpers'
// changes no principal made: anyone who can publish can make them), the
// rules' firings (and the helper changes a rule's firing made: any
// principal's rules fire as often as their triggers come, so a firing
// can come in a loop), the rule changes (install, replace, enable,
// disable, remove: a guest may switch its own rule as often as it
// likes, but no firing may evict the line saying who installed a rule:
// attacker round 20), and the house's own lines (approvals, the server's
// notes), which neither the devices nor a guest's busy rules can evict.
// The firings' and the rule changes' shares are split again by principal
// (LogShares), so that one principal's rules cannot evict another's lines
// either.
const (
	shareOwn = iota
	shareBus
	shareRules // firings, and the helper changes a rule made
	shareChanges
	nShares
)

// logShareTable is the one table of the shares: what each keeps of the
// logbook's rows (num/den; the house's own lines keep the rest) and
// whether it has a part per principal.
var logShareTable = [nShares]struct {
	num, den    int
	byPrincipal bool
}{
	shareBus:     {1, 2, false},
	shareRules:   {1, 4, true},
	shareChanges: {1, 20, true},
}

// shareOf is the share an entry of kind belongs to.
func shareOf(kind string) int {
	switch kind {
	case "event", "availability", "helper":
		return shareBus
	case "firing":
		return shareRules
	case "rule":
		return shareChanges
	}
	return shareOwn
}

// LogFromBus reports whether entry e is one the devices report (the
// bus's, or a helper's change no principal made).
func LogFromBus(e LogEntry) bool { return entryShare(e) == shareBus }

// LogShares bounds the logbook's rows: the newest MaxRows are kept, each
// share's within its part of them (logShareTable): the bus's at most
// half, the rules' firings a quarter, the rule changes a twentieth, and
// the house's own lines the rest. The firings' and the changes' shares
// each have a part per principal: the owner's rules keep half of it, and
// each guest (a principal known at start) an equal part of the other
// half, with one more part for the lines of any other name (a principal
// since removed from the configuration). With no guests the owner keeps
// seven eighths.
type LogShares struct {
	maxRows int
	rows    [nShares]int64 // the shares split by no principal
	owner   string
	guests  map[string]bool
	// ownerRows and guestRows are, in a share split by principal, the
	// owner's part and each other part.
	ownerRows, guestRows [nShares]int64
}

// NewLogShares shares maxRows out (maxRows <= 0: nothing is trimmed);
// owner names the owner principal, guests the others configured.
func NewLogShares(maxRows int, owner string, guests []string) *LogShares {
	sh := &LogShares{maxRows: maxRows, owner: owner, guests: map[string]bool{}}
	for _, g := range guests {
		if g != owner {
			sh.guests[g] = true
		}
	}
	own := maxRows
	for share, t := range logShareTable {
		if t.den == 0 {
			continue
		}
		rows := maxRows * t.num / t.den
		own -= rows
		if !t.byPrincipal {
			sh.rows[share] = int64(rows)
			continue
		}
		others := rows / 8
		if len(sh.guests) > 0 {
			others = rows / 2
		}
		// A tiny logbook still keeps each part's newest line.
		sh.ownerRows[share] = int64(max(1, rows-others))
		sh.guestRows[share] = int64(max(1, others/(len(sh.guests)+1)))
	}
	sh.rows[shareOwn] = int64(max(own, 0))
	return sh
}

// logPart is where an entry is numbered and trimmed: its share and, in
// a share split by principal, the principal whose part it is ("" the
// part of names not known at start).
type logPart struct {
	share int
	who   string
}

// entryShare is the share of entry e: a helper's change is the rules'
// when a principal's rule made it (e.Principal set), else the devices'.
func entryShare(e LogEntry) int {
	if e.Kind == "helper" && e.Principal != "" {
		return shareRules
	}
	return shareOf(e.Kind)
}

// partOf is the part an entry belongs to.
func (sh *LogShares) partOf(e LogEntry) logPart {
	share := entryShare(e)
	if !logShareTable[share].byPrincipal {
		return logPart{share: share}
	}
	if e.Principal == sh.owner || sh.guests[e.Principal] {
		return logPart{share, e.Principal}
	}
	return logPart{share, ""}
}

// Guest reports whether e is a line of a rule of a principal other than
// the owner (a firing, a helper change its rule made, a rule change).
func (sh *LogShares) Guest(e LogEntry) bool {
	return logShareTable[entryShare(e)].byPrincipal && e.Principal != sh.owner
}

// keep is how many rows part keeps (-1: no bound).
func (sh *LogShares) keep(p logPart) int64 {
	switch {
	case sh == nil || sh.maxRows <= 0:
		return -1
	case !logShareTable[p.share].byPrincipal:
		return sh.rows[p.share]
	case p.who == sh.owner:
		return sh.ownerRows[p.share]
	}
	return sh.guestRows[p.share]
}

// LogTrimmed is what a WriteLog trimmed, by share: Rules the owner's
// rules' lines (firings and rule changes), Guests other principals'.
type LogTrimmed struct{ Bus, Rules, Guests, Own int }

// add counts n rows trimmed from part p.
func (t *LogTrimmed) add(sh *LogShares, p logPart, n int) {
	switch {
	case p.share == shareBus:
		t.Bus += n
	case p.share == shareOwn:
		t.Own += n
	case p.who == sh.owner:
		t.Rules += n
	default:
		t.Guests += n
	}
}

// WriteLog appends entries in one transaction and trims each part they
// were written to (LogShares) to its bound, the oldest first, so that a
// flood on the bus or a guest's busy rules cannot evict the house's or
// the owner's lines. Each part is numbered by its own sequence (seq), so
// the trim is one indexed delete per part written to.
func (s *Store) WriteLog(ctx context.Context, entries []LogEntry, sh *LogShares) (LogTrimmed, error) {
	var trimmed LogTrimmed
	err := s.inTx(ctx, "logbook", func(tx *sql.Tx) error {
		last, err := insertLog(ctx, tx, entries, sh)
		if err != nil {
			return err
		}
		for p, seq := range last {
			keep := sh.keep(p)
			if keep < 0 || seq <= keep {
				continue
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM logbook WHERE share = ? AND part = ? AND seq <= ?`, p.share, p.who, seq-keep)
			if err != nil {
				return fmt.Errorf("storage: logbook: trim: %w", err)
			}
			d, _ := res.RowsAffected()
			trimmed.add(sh, p, int(d))
		}
		return nil
	})
	return trimmed, err
}

// insertLog inserts entries, numbering each in its part from the part's
// last seq on, and returns each part's last seq.
func insertLog(ctx context.Context, tx *sql.Tx, entries []LogEntry, sh *LogShares) (map[logPart]int64, error) {
	st, err := tx.PrepareContext(ctx, `INSERT INTO logbook (t, kind, device, area, rule, principal, ref, run, status, text, share, part, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("storage: logbook: %w", err)
	}
	defer st.Close()
	if sh == nil {
		sh = NewLogShares(0, "", nil)
	}
	last := map[logPart]int64{}
	for _, e := range entries {
		p := sh.partOf(e)
		seq, ok := last[p]
		if !ok {
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM logbook WHERE share = ? AND part = ?`, p.share, p.who).Scan(&seq); err != nil {
				return nil, fmt.Errorf("storage: logbook: %w", err)
			}
		}
		seq++
		last[p] = seq
		if _, err := st.ExecContext(ctx, e.T.UnixNano(), e.Kind, e.Device, e.Area, e.Rule, e.Principal, e.Ref, e.Run, e.Status, e.Text,
			p.share, p.who, seq); err != nil {
			return nil, fmt.Errorf("storage: logbook: %w", err)
		}
	}
	return last, nil
}
