package ratelog

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Within a second only the first failure is logged; the next line says
// how many were left out.
func TestFailureRateLimited(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	r := Log{Log: zap.New(core), Msg: "down"}
	for range 5 {
		r.Failure(errors.New("refused"))
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d lines for 5 failures within a second, want 1", n)
	}
	r.last = r.last.Add(-2e9) // as if two seconds had passed
	r.Failure(errors.New("refused"))
	all := logs.All()
	if len(all) != 2 || all[1].ContextMap()["not_logged_since_last"] != int64(4) {
		t.Fatalf("lines %v, want a second line counting the 4 left out", all)
	}
}
