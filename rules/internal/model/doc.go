// Package model is the automation/1 program model: the decoded program, its
// expressions and templates, the immutable run form a valid program is
// lowered into, the World a run may touch, and the Cache they share.
package model
