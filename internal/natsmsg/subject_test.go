package natsmsg

import "testing"

// Literal subjects for publishing, wildcards for subscribing.
func TestSubjectProblem(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "a.b.c": true, "a.*": false, "a.>": false, "": false, "a..b": false, "a b": false, ".a": false, "a.": false} {
		if got := SubjectProblem(s, false) == ""; got != want {
			t.Errorf("literal %q: ok %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"a.*": true, "a.>": true, ">": true, "a.>.b": false, "*.b": true} {
		if got := SubjectProblem(s, true) == ""; got != want {
			t.Errorf("wildcard %q: ok %v, want %v", s, got, want)
		}
	}
}
