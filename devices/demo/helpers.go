package demo

import "github.com/pilothouse/pilothouse/helpers"

// Helpers are the demo house's own helpers, served while the demo runs
// (as the configuration file's are), so a first start shows what a
// household keeps beside its devices: a flag rules read, a timer whose
// end fires a rule, and a counter a rule counts with.
func Helpers() []helpers.Def {
	zero := 0.0
	return []helpers.Def{
		{ID: "vacation_mode", Name: "Vacation mode", Kind: helpers.Flag},
		{ID: "kitchen_timer", Name: "Kitchen timer", Kind: helpers.Timer, Duration: "PT10M", Area: "living"},
		{ID: "night_counter", Name: "Night visits", Kind: helpers.Counter, Min: &zero, Area: "hall"},
		{ID: "wake_up", Name: "Wake-up time", Kind: helpers.DateTime, Mode: "time", Initial: "06:45", Area: "bedroom"},
	}
}
