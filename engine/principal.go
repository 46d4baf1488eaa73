package engine

import (
	"context"

	"github.com/pilothouse/pilothouse/engine/internal/access"
)

// Who may do what (see package access), as the engine's callers name it.
type (
	Principal      = access.Principal
	Scope          = access.Scope
	ApprovalPolicy = access.ApprovalPolicy
)

// Owner is the default all-seeing principal (stdio and unauthenticated
// loopback serving without configured principals).
var Owner = access.Owner

// Risk hint names a policy's Require admits.
const (
	HintDestructive = access.HintDestructive
	HintOpenWorld   = access.HintOpenWorld
)

// HashToken returns the stored form of a bearer token.
func HashToken(token string) string { return access.HashToken(token) }

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context { return access.With(ctx, p) }

// PrincipalFrom returns the principal in ctx, or nil.
func PrincipalFrom(ctx context.Context) *Principal { return access.From(ctx) }
