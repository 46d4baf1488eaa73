package main

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/engine"
)

// approvals reads the risk gate's settings: how long a request stays open
// (ttl), the web UI's address as a human opens it (web_url), which the
// approval links name, and the policy of principals without their own.
func (l *cfgLoader) approvals(n *yaml.Node, key string) error {
	keys := l.policyKeys(&l.c.Approval)
	keys["ttl"] = l.duration(&l.c.ApprovalTTL)
	keys["web_url"] = l.checked(&l.c.WebURL, func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("want an http(s) URL such as \"https://house.example:8080\", got %q", s)
		}
		return nil
	})
	return l.mapping(n, key, keys)
}

// ownApprovalPolicy reads p's own risk-gate policy.
func (l *cfgLoader) ownApprovalPolicy(p *engine.Principal) handler {
	return func(n *yaml.Node, key string) error {
		p.Approval = &engine.ApprovalPolicy{}
		return l.approvalPolicy(p.Approval)(n, key)
	}
}

// approvalPolicy reads a risk-gate policy.
func (l *cfgLoader) approvalPolicy(pol *engine.ApprovalPolicy) handler {
	return func(n *yaml.Node, key string) error { return l.mapping(n, key, l.policyKeys(pol)) }
}

// policyKeys are a risk-gate policy's keys, in approvals and in a
// principal's own approval.
func (l *cfgLoader) policyKeys(pol *engine.ApprovalPolicy) map[string]handler {
	return map[string]handler{
		"require":      l.requireList(&pol.Require),
		"pre_approved": l.strList(&pol.PreApproved, checkPattern),
		"self_approve": l.boolean(&pol.SelfApprove),
	}
}

// webURL is the base of the links to the web UI's approval pages: the
// configured web_url, else the listen address (a wildcard host as
// localhost).
func (c *Config) webURL() string {
	if c.WebURL != "" {
		return strings.TrimSuffix(c.WebURL, "/")
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return "http://" + c.Addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// requireList reads the risk hints a policy requires approval for.
func (l *cfgLoader) requireList(dst *[]string) handler {
	return l.strList(dst, func(s string) error {
		if s != engine.HintDestructive && s != engine.HintOpenWorld {
			return fmt.Errorf("unknown risk hint %q (destructive, openWorld)", s)
		}
		return nil
	})
}
