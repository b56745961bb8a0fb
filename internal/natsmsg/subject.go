package natsmsg

import (
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/vertex"
)

// SubjectProblem says what is wrong with subject as a NATS subject, ""
// when nothing is: empty, white space or an empty token, or, unless
// wildcards, a '*' or '>' token (a publish needs a literal subject).
func SubjectProblem(subject string, wildcards bool) string {
	if subject == "" {
		return "needs a subject"
	}
	if strings.ContainsAny(subject, " \t\r\n") {
		return "must not hold white space"
	}
	// Token by token, without splitting: a sink asks this per message.
	for rest := subject; ; {
		t, more := rest, false
		if j := strings.IndexByte(rest, '.'); j >= 0 {
			t, rest, more = rest[:j], rest[j+1:], true
		}
		switch {
		case t == "":
			return "must not hold an empty token"
		case (t == "*" || t == ">") && !wildcards:
			return "must be a literal subject, without wildcards"
		case t == ">" && more:
			return "may hold '>' only as its last token"
		}
		if !more {
			return ""
		}
	}
}

// CheckSink checks the fields the NATS and the JetStream sink share: a
// connection, and one of Subject and SubjectOf, a Subject a publish can
// use. The error is a *vertex.OptionError of package pkg naming the field.
func CheckSink(pkg string, conn *nats.Conn, subject string, subjectOf bool) error {
	fail := func(option string, value any, reason string) error {
		return &vertex.OptionError{Package: pkg, Option: option, Value: value, Reason: reason}
	}
	switch {
	case conn == nil:
		return fail("Conn", conn, "needs a connection")
	case subject != "" && subjectOf:
		return fail("SubjectOf", "func", "must not be set with Subject: one or the other")
	case subject == "" && !subjectOf:
		return fail("Subject", subject, "needs a subject, or SubjectOf")
	case subject != "":
		if p := SubjectProblem(subject, false); p != "" {
			return fail("Subject", subject, p)
		}
	}
	return nil
}
