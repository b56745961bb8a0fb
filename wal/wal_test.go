package wal

import (
	"testing"
)

func TestAppendReplayReopen(t *testing.T) {
	dir := t.TempDir()
	w := openT(t, dir)
	if got := replayAll(t, w); len(got) != 0 {
		t.Fatalf("new log replays %d entries", len(got))
	}
	var want []Entry
	for b := range 10 {
		var batch []Entry
		for i := range 7 {
			batch = append(batch, msg(int32(i%2), int64(b*7+i), b%3))
		}
		appendT(t, w, batch...)
		want = append(want, batch...)
	}
	closeT(t, w)
	w = openT(t, dir)
	defer closeT(t, w)
	checkEntries(t, replayAll(t, w), want)
	rec := w.Recovered()
	if rec.Entries != 70 || rec.LastOffsets[0] != 69 || rec.LastOffsets[1] != 68 || rec.Repaired != nil || rec.Compacted {
		t.Fatalf("recovered %+v", rec)
	}
}
