package kafka

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// A revoked partition is not committed by its old owner: the second
// member of the group takes one of the first member's two partitions and
// reads it from the start (nothing of it was committed); the first
// member's acknowledgements of its batches of that partition, which come
// after the revocation, are ignored and counted as stale, while those of
// the partition it kept are committed.
func TestRevokedPartitionIsNotCommitted(t *testing.T) {
	c := newCluster(t, 2, "t")
	produceIDs(t, client(t, c), "t", 0, 40, 8)
	cfg := SourceConfig{Group: "g", Topics: []string{"t"}}
	a := newTestSource(t, c, cfg)
	held := readBatches(t, a, 5, 40) // read, not acknowledged
	byPart := map[int][]vertex.Message[[]byte]{}
	for _, b := range held {
		p := a.PartitionOf(b)
		byPart[p] = append(byPart[p], b...)
	}
	if len(byPart[0]) == 0 || len(byPart[1]) == 0 {
		t.Fatalf("the 40 records are not on both partitions: %d and %d", len(byPart[0]), len(byPart[1]))
	}

	// b joins; the group moves one partition to it.
	b := newTestSource(t, c, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []vertex.Message[[]byte]
	moved := -1
	for moved < 0 || len(got) < len(byPart[moved]) {
		batch, err := b.Read(ctx, 100)
		if err != nil {
			t.Fatalf("b read %d messages: %v", len(got), err)
		}
		if len(batch) == 0 {
			continue
		}
		if p := b.PartitionOf(batch); moved < 0 {
			moved = p
		} else if p != moved {
			t.Fatalf("b read partitions %d and %d; the group moves one", moved, p)
		}
		got = append(got, batch...)
	}
	kept := 1 - moved
	idsOf := func(ms []vertex.Message[[]byte]) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.ID
		}
		return out
	}
	if !slices.Equal(idsOf(got), idsOf(byPart[moved])) {
		t.Fatalf("b read %q of the moved partition, want what a had read of it: %q", idsOf(got), idsOf(byPart[moved]))
	}

	// a's acknowledgements come after the revocation.
	for _, batch := range held {
		if err := a.Ack(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.commitDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := a.Stale(); n != int64(len(byPart[moved])) {
		t.Errorf("a counted %d stale acknowledgements, want %d (its batches of the moved partition)", n, len(byPart[moved]))
	}
	want := map[int32]int64{int32(kept): int64(len(byPart[kept]))}
	if c := committed(t, c, "g", "t"); !maps.Equal(c, want) {
		t.Fatalf("committed %v, want only the kept partition %d at %d", c, kept, len(byPart[kept]))
	}
}
