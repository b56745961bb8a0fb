package forwarder

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
)

// TestReduceKeysNeverCollide is issue 18's fifth defect: keys were joined
// with NUL, so {"a","b"} and {"a\x00b"} shared one window, and nil and {""}
// joined to one string but went to shards by a per-process random hash
// (sometimes one result, sometimes two). Now every distinct key list has
// its own windows and its own result ID ({"a/b"} and {"a","b"} too), on
// any number of shards.
func TestReduceKeysNeverCollide(t *testing.T) {
	lists := []struct {
		keys []string
		n    int
	}{{[]string{"a", "b"}, 3}, {[]string{"a\x00b"}, 2}, {[]string{"a/b"}, 4}, {nil, 5}, {[]string{""}, 6}, {[]string{"", ""}, 1}}
	var msgs []msg
	for i := range 6 { // interleaved
		for _, l := range lists {
			if i < l.n {
				msgs = append(msgs, msg{ID: fmt.Sprint(len(msgs)), Keys: l.keys, EventTime: time.Unix(1, 0)})
			}
		}
	}
	iv := window.Interval{Start: 0, End: int64(time.Minute)}
	for _, shards := range []int{1, 2, 3} {
		o := runReduceSized(t, msgs, vertex.Fixed(time.Minute), false, Final, 7, shards)
		if o.err != nil {
			t.Fatal(o.err)
		}
		if len(o.results) != len(lists) {
			t.Errorf("%d shards: %d results, want %d (one per key list)", shards, len(o.results), len(lists))
		}
		for _, l := range lists {
			id := resultID("r", iv, l.keys, 0)
			i := slices.IndexFunc(o.results, func(r result) bool { return r.ID == id })
			switch {
			case i < 0:
				t.Errorf("%d shards: no result %q for keys %q", shards, id, l.keys)
			case o.results[i].Value.Value != int64(l.n) || !slices.Equal(o.results[i].Value.Keys, l.keys):
				t.Errorf("%d shards: result %q = %d of keys %q, want %d of %q", shards, id, o.results[i].Value.Value, o.results[i].Value.Keys, l.n, l.keys)
			}
		}
	}
}

// The result IDs escape what would make two key lists' IDs equal.
func TestResultIDEscapesKeys(t *testing.T) {
	iv := window.Interval{Start: 1, End: 2}
	for _, c := range []struct {
		keys []string
		want string
	}{
		{nil, "r/1-2"},
		{[]string{""}, "r/1-2/"},
		{[]string{"a", "b"}, "r/1-2/a/b"},
		{[]string{"a/b"}, "r/1-2/a%2Fb"},
		{[]string{"x#1"}, "r/1-2/x%231"},
		{[]string{"100%"}, "r/1-2/100%25"},
	} {
		if got := resultID("r", iv, c.keys, 0); got != c.want {
			t.Errorf("resultID of %q = %q, want %q", c.keys, got, c.want)
		}
	}
	if got := resultID("r", iv, []string{"x"}, 1); got != "r/1-2/x#1" {
		t.Errorf("second result of x: %q", got)
	}
}
