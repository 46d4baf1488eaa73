package engine

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
	Scope     Scope  `json:"scope"`
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
var Owner = &Principal{Name: "owner", Deploy: true}

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

// scopeKey identifies the scope for caching views.
func (p *Principal) scopeKey() string { return p.Name }

// deviceOf is the device part of an entry id ("hall_light.set" → "hall_light").
func deviceOf(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}

// Visible reports whether e is inside p's scope. deviceTags are the tags of
// the entry's device (entries inherit their device's area and type).
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
	tags := e.Tags
	if deviceTags != nil {
		tags = append(append([]string(nil), e.Tags...), deviceTags...)
	}
	for _, t := range s.DenyTypes {
		if hasTag(tags, "type:"+t) {
			return false
		}
	}
	dev := deviceOf(e.ID)
	for _, pat := range s.DenyDevices {
		if ok, _ := path.Match(pat, dev); ok || pat == e.ID {
			return false
		}
	}
	if len(s.Devices) > 0 {
		found := false
		for _, pat := range s.Devices {
			if ok, _ := path.Match(pat, dev); ok {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(s.Areas) > 0 {
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
		found := false
		for _, a := range s.Areas {
			if strings.EqualFold(a, area) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func containsKind(ks []pilotage.Kind, k pilotage.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func hasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
