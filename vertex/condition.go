package vertex

import (
	"strconv"
	"strings"
)

// Condition decides from a message's tags whether an edge carries it. Build
// one with [AnyTag], [AllTags], [Not], [And] and [Or]; a nil Condition
// matches every message. Conditions are immutable and safe for concurrent use.
type Condition struct {
	op   condOp
	tags []string
	subs []*Condition
}

type condOp uint8

const (
	opAny condOp = iota + 1
	opAll
	opNot
	opAnd
	opOr
)

// AnyTag matches a message carrying at least one of tags (or).
func AnyTag(tags ...string) *Condition {
	return &Condition{op: opAny, tags: append([]string(nil), tags...)}
}

// AllTags matches a message carrying every one of tags (and).
func AllTags(tags ...string) *Condition {
	return &Condition{op: opAll, tags: append([]string(nil), tags...)}
}

// Not matches a message that c does not match.
func Not(c *Condition) *Condition { return &Condition{op: opNot, subs: []*Condition{c}} }

// And matches a message that every one of conds matches (nil ones match all).
func And(conds ...*Condition) *Condition {
	return &Condition{op: opAnd, subs: append([]*Condition(nil), conds...)}
}

// Or matches a message that at least one of conds matches.
func Or(conds ...*Condition) *Condition {
	return &Condition{op: opOr, subs: append([]*Condition(nil), conds...)}
}

// Match reports whether a message with tags passes c. A nil c matches all.
func (c *Condition) Match(tags []string) bool {
	if c == nil {
		return true
	}
	switch c.op {
	case opAny:
		for _, want := range c.tags {
			if contains(tags, want) {
				return true
			}
		}
		return false
	case opAll:
		for _, want := range c.tags {
			if !contains(tags, want) {
				return false
			}
		}
		return true
	case opNot:
		return !c.subs[0].Match(tags)
	case opAnd:
		for _, s := range c.subs {
			if !s.Match(tags) {
				return false
			}
		}
		return true
	case opOr:
		for _, s := range c.subs {
			if s.Match(tags) {
				return true
			}
		}
		return false
	}
	return false
}

// problem reports the first problem of c, for [Condition.Validate].
func (c *Condition) problem() string {
	if c == nil {
		return ""
	}
	switch c.op {
	case opAny, opAll:
		if len(c.tags) == 0 {
			return "a tag condition needs at least one tag"
		}
		for _, t := range c.tags {
			if t == "" {
				return "a tag condition has an empty tag"
			}
			if strings.HasPrefix(t, ReservedTagPrefix) {
				// Dropped and control messages never reach an edge.
				return "tag " + strconv.Quote(t) + " is reserved (prefix " + ReservedTagPrefix + ")"
			}
		}
		return ""
	case opNot:
		if c.subs[0] == nil {
			return "Not needs a condition"
		}
		return c.subs[0].problem()
	case opAnd, opOr:
		if len(c.subs) == 0 {
			return "And and Or need at least one condition"
		}
		for _, s := range c.subs {
			if msg := s.problem(); msg != "" {
				return msg
			}
		}
		return ""
	}
	return "a condition must be built with AnyTag, AllTags, Not, And or Or"
}

// Validate returns a *ConditionError, which matches [ErrInvalidCondition],
// when c cannot match as written (no tags, an empty tag, a tag under
// [ReservedTagPrefix], a zero Condition); a nil c is valid. The pipeline
// validates the condition of every edge when it starts.
func (c *Condition) Validate() error {
	if msg := c.problem(); msg != "" {
		return &ConditionError{Condition: c.String(), Reason: msg}
	}
	return nil
}

// String renders c, e.g. `any(a,b)` or `not(all(x,y))`; nil is "all messages".
func (c *Condition) String() string {
	if c == nil {
		return "all messages"
	}
	switch c.op {
	case opAny:
		return "any(" + strings.Join(c.tags, ",") + ")"
	case opAll:
		return "all(" + strings.Join(c.tags, ",") + ")"
	case opNot:
		return "not(" + c.subs[0].String() + ")"
	case opAnd, opOr:
		parts := make([]string, len(c.subs))
		for i, s := range c.subs {
			parts[i] = s.String()
		}
		name := "and"
		if c.op == opOr {
			name = "or"
		}
		return name + "(" + strings.Join(parts, ",") + ")"
	}
	return "invalid"
}

func contains(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}
