package pipeline

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/runnel-dev/runnel/vertex"
)

// A restart on durable storage says in the log what each vertex recovered:
// the generator its saved position, each reader where its input resumes,
// the reduce the WAL entries it replayed and the windows they reopened;
// every such line says how long its recovery took. The results stay
// exact.
func TestRestartLogsWhatWasRecovered(t *testing.T) {
	dir := t.TempDir()
	got := map[string][2]int64{}
	w := vertex.Fixed(time.Second)
	if err := (walRun{replicas: 2, window: w, stopAt: walN / 2}).run(t, dir, got); err != nil {
		t.Fatalf("first run: %v", err)
	}
	core, obs := observer.New(zap.InfoLevel)
	if err := (walRun{replicas: 2, window: w, stopAt: -1, opts: []Option{WithLogger(zap.New(core))}}).run(t, dir, got); err != nil {
		t.Fatalf("second run: %v", err)
	}
	compareResults(t, got, oracle(time.Second))

	src := obs.FilterMessage("source resumes").All()
	if len(src) != 1 || src[0].ContextMap()["saved position found"] != true || src[0].ContextMap()["vertex"] != "gen" {
		t.Errorf("source lines %v, want one for gen with its saved position found", src)
	}
	for _, e := range src {
		checkTook(t, e)
	}
	resumed := map[string]int{}
	for _, e := range obs.FilterMessage("vertex resumes its input buffer").All() {
		checkTook(t, e)
		f := e.ContextMap()
		parts, _ := f["partitions"].([]any)
		for _, p := range parts {
			if !strings.Contains(p.(string), ": commit ") {
				t.Errorf("partition position %q", p)
			}
		}
		resumed[f["vertex"].(string)] = len(parts)
	}
	if resumed["pass"] != 1 || resumed["sum"] != walParts || resumed["out"] != 1 {
		t.Errorf("input positions logged per vertex %v, want pass 1, sum %d, out 1 partitions", resumed, walParts)
	}
	var replayed, reopened int64
	for _, e := range obs.FilterMessage("reduce recovered its open windows from the WAL").All() {
		checkTook(t, e)
		f := e.ContextMap()
		replayed += f["entries replayed"].(int64)
		reopened += f["windows (window, key) reopened"].(int64)
	}
	if replayed == 0 || reopened == 0 || reopened > replayed {
		t.Errorf("WAL recovery lines: %d entries replayed, %d windows reopened; want both > 0, windows <= entries", replayed, reopened)
	}
}

// checkTook checks that a recovery line says how long the recovery took: a
// duration field "took", not negative (its size depends on the machine).
func checkTook(t *testing.T, e observer.LoggedEntry) {
	t.Helper()
	for _, f := range e.Context {
		if f.Key != "took" {
			continue
		}
		if f.Type != zapcore.DurationType || time.Duration(f.Integer) < 0 {
			t.Errorf("%q: took is %v of field type %v, want a duration >= 0", e.Message, time.Duration(f.Integer), f.Type)
		}
		return
	}
	t.Errorf("%q has no took field: %v", e.Message, e.ContextMap())
}
