package natsmsg

import "strings"

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
