// Package access owns who may do what: principals (callers and their
// tokens), their catalog scope and their risk-gate policy.
package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"path"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Principal is one caller identity with its catalog scope. Scope applies
// everywhere: catalog listings and versions, validation findings and hints,
// execution, runs and program refs.
type Principal struct {
	Name string `json:"name"`
	// TokenHash is the hex SHA-256 of the bearer token ("" = no token: only
	// usable as the stdio/in-process default principal).
	TokenHash string `json:"-"`
	Deploy    bool   `json:"deploy"`
	// Admin sees every installed rule, run and trace of the house,
	// whoever installed or ran it (the owner is one); Scope still bounds
	// its catalog. Managing a rule still needs Deploy.
	Admin bool  `json:"admin,omitempty"`
	Scope Scope `json:"scope"`
	// Approver may approve other principals' risky deploys (the owner
	// always may); Approval is this principal's risk-gate policy (nil:
	// the house's, Config.Approval).
	Approver bool            `json:"approver,omitempty"`
	Approval *ApprovalPolicy `json:"approval,omitempty"`
}

// Scope restricts what a principal sees. An empty allow list allows all;
// deny lists win over allow lists.
type Scope struct {
	// Areas: entries whose device carries tag area:<x> for x in Areas
	// (entries without an area are visible only when AllowNoArea is set or
	// Areas is empty).
	Areas       []string `json:"areas,omitempty"`
	AllowNoArea bool     `json:"allow_no_area,omitempty"`
	// Devices: path.Match patterns over the device part of the id
	// (e.g. "living_*"); DenyDevices hides matches.
	Devices     []string `json:"devices,omitempty"`
	DenyDevices []string `json:"deny_devices,omitempty"`
	// Kinds allowed (empty = all); DenyTypes hides device types by tag
	// type:<x> (e.g. "lock", "cover"), DenyRisks hides entries by risk.
	Kinds     []pilotage.Kind `json:"kinds,omitempty"`
	DenyTypes []string        `json:"deny_types,omitempty"`
	DenyRisks []pilotage.Risk `json:"deny_risks,omitempty"`
}

// Owner is the default all-seeing principal (stdio and unauthenticated
// loopback serving without configured principals).
var Owner = &Principal{Name: "owner", Deploy: true, Admin: true}

// HashToken returns the stored form of a bearer token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Matches reports whether token belongs to p, in constant time.
func (p *Principal) Matches(token string) bool {
	if p.TokenHash == "" || token == "" {
		return false
	}
	h := HashToken(token)
	return subtle.ConstantTimeCompare([]byte(h), []byte(p.TokenHash)) == 1
}

// OwnsRun reports whether p may see a run or a firing recorded under the
// principal named ranAs: its own, or any when p is an administrator.
func (p *Principal) OwnsRun(ranAs string) bool { return p.Admin || ranAs == p.Name }

// ScopeKey identifies the scope for caching views.
func (p *Principal) ScopeKey() string { return p.Name }

// DeviceOf is the device part of an entry id ("hall_light.set" → "hall_light").
func DeviceOf(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}

// Visible reports whether e is inside p's scope. deviceTags are the tags of
// the entry's device (entries inherit their device's area and type).
//
// A promoted automation is judged here only by what it is (kind, risk, an
// exact deny of its id): it has no device, area or type, and whether it may
// be seen depends on everything it reaches, which the catalog decides from
// its transitive references (the engine's catalog service).
func (p *Principal) Visible(e *pilotage.Entry, deviceTags []string) bool {
	s := &p.Scope
	if len(s.Kinds) > 0 && !containsKind(s.Kinds, e.Kind) {
		return false
	}
	for _, r := range s.DenyRisks {
		if e.Risk == r {
			return false
		}
	}
	if e.Kind == pilotage.KindAutomation {
		for _, pat := range s.DenyDevices {
			if pat == e.ID {
				return false
			}
		}
		return true
	}
	tags := e.Tags
	if deviceTags != nil {
		tags = append(append([]string(nil), e.Tags...), deviceTags...)
	}
	for _, t := range s.DenyTypes {
		if HasTag(tags, "type:"+t) {
			return false
		}
	}
	return p.deviceAllowed(e.ID) && p.areaAllowed(tags)
}

// deviceAllowed applies the device patterns to an entry id.
func (p *Principal) deviceAllowed(id string) bool {
	s := &p.Scope
	dev := DeviceOf(id)
	for _, pat := range s.DenyDevices {
		if ok, _ := path.Match(pat, dev); ok || pat == id {
			return false
		}
	}
	if len(s.Devices) == 0 {
		return true
	}
	for _, pat := range s.Devices {
		if ok, _ := path.Match(pat, dev); ok {
			return true
		}
	}
	return false
}

// areaAllowed applies the area list to an entry's (and its device's) tags.
func (p *Principal) areaAllowed(tags []string) bool {
	s := &p.Scope
	if len(s.Areas) == 0 {
		return true
	}
	area := ""
	for _, t := range tags {
		if strings.HasPrefix(t, "area:") {
			area = t[len("area:"):]
			break
		}
	}
	if area == "" {
		return s.AllowNoArea
	}
	for _, a := range s.Areas {
		if strings.EqualFold(a, area) {
			return true
		}
	}
	return false
}

// Unrestricted reports whether p's scope lets it see every entry.
func (p *Principal) Unrestricted() bool {
	s := &p.Scope
	return len(s.Kinds) == 0 && len(s.DenyRisks) == 0 && len(s.DenyTypes) == 0 &&
		len(s.DenyDevices) == 0 && len(s.Devices) == 0 && len(s.Areas) == 0
}

// VisibleAbsent reports whether p may see an entry that is not in the
// catalog now (its device vanished, or has not been announced again since
// a restart), judged by its id alone: a scope that needs the entry's kind,
// risk or tags to decide does not see it. A rule reaching an entry the
// caller could not see must not surface while that entry is away.
func (p *Principal) VisibleAbsent(id string) bool {
	s := &p.Scope
	if len(s.Kinds) > 0 || len(s.DenyRisks) > 0 || len(s.DenyTypes) > 0 || len(s.Areas) > 0 {
		return false
	}
	return p.deviceAllowed(id)
}

func containsKind(ks []pilotage.Kind, k pilotage.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// HasTag reports whether tags holds t.
func HasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}

type principalKey struct{}

// With returns ctx carrying p.
func With(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// From returns the principal in ctx, or nil.
func From(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
