package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// TestConfigApprovals: the house's risk-gate policy, a principal's own,
// and located errors for what is not one.
func TestConfigApprovals(t *testing.T) {
	c, _, err := loadYAML(t, `approvals:
  ttl: 5m
  web_url: https://house.example:8080/
  require: [destructive]
  pre_approved: [notify.phone]
principals:
  - {name: owner, token: owner-token-0123456789abcdefghijklmnop, deploy: true}
  - name: partner
    token: partner-token-0123456789abcdefghijklm
    deploy: true
    approver: true
    approval: {require: [], self_approve: true}
`)
	if err != nil {
		t.Fatal(err)
	}
	if c.ApprovalTTL != 5*time.Minute || c.webURL() != "https://house.example:8080" ||
		!reflect.DeepEqual(c.Approval, engine.ApprovalPolicy{Require: []string{"destructive"}, PreApproved: []string{"notify.phone"}}) {
		t.Errorf("house policy: %v %q %+v", c.ApprovalTTL, c.webURL(), c.Approval)
	}
	owner, partner := c.Principals[0], c.Principals[1]
	if owner.Approval != nil || !partner.Approver || partner.Approval == nil || partner.Approval.Require == nil ||
		len(partner.Approval.Require) != 0 || !partner.Approval.SelfApprove {
		t.Errorf("principals: owner %+v, partner %+v %+v", owner, partner, partner.Approval)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"approvals:\n  require: [scary]\n", `approvals.require[0]: unknown risk hint "scary"`},
		{"approvals:\n  web_url: house\n", "approvals.web_url: want an http(s) URL"},
		{"approvals:\n  ttl: soon\n", "approvals.ttl"},
	} {
		if _, _, err := loadYAML(t, tc.yaml); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if got := (&Config{Addr: "0.0.0.0:8080"}).webURL(); got != "http://localhost:8080" {
		t.Errorf("web URL of a wildcard listen address: %q", got)
	}
}
