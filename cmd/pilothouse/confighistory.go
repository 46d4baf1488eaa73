package main

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/engine"
)

// historyConfig is the configuration file's history section: the state
// history behind the device page's charts and lookup's history.
type historyConfig struct {
	Off       bool
	Retention time.Duration // 0 = the engine's default (10 days)
	MaxRows   int           // 0 = the engine's default
}

func (h historyConfig) engine() engine.HistoryConfig {
	return engine.HistoryConfig{Off: h.Off, Retention: h.Retention, MaxRows: h.MaxRows}
}

// history reads history: {enabled, retention, max_rows}.
func (l *cfgLoader) history(n *yaml.Node, key string) error {
	h := &l.c.History
	on := !h.Off
	err := l.mapping(n, key, map[string]handler{
		"enabled":   l.boolean(&on),
		"retention": l.duration(&h.Retention),
		"max_rows":  l.integer(&h.MaxRows),
	})
	h.Off = !on
	return err
}
