// Package model owns what the catalog and its producers share: a device's
// spec and the entries built from it, actions and their input fields, ids
// and their registry, templates and their work budget, and the record of
// the live changes a message's routes compute.
package model
