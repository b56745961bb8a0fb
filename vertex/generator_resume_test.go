package vertex_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// memState is a StateStore in memory that counts saves.
type memState struct {
	state []byte
	ok    bool
	saves int
}

func (m *memState) Load() ([]byte, bool, error) { return m.state, m.ok, nil }
func (m *memState) Save(b []byte) error {
	m.state, m.ok = append([]byte(nil), b...), true
	m.saves++
	return nil
}

func (m *memState) pos() int64 { return int64(binary.LittleEndian.Uint64(m.state)) }

// position encodes a generator position: acked, then spans (first, end).
func position(acked int64, spans ...int64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(acked))
	for _, v := range spans {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// genBatches reads g in batches of n until io.EOF and returns the IDs per batch.
func genBatches(t *testing.T, g *vertex.GeneratorSource[int64], n int) [][]string {
	t.Helper()
	var out [][]string
	for {
		msgs, err := g.Read(context.Background(), n)
		if len(msgs) > 0 {
			var b []string
			for _, m := range msgs {
				b = append(b, m.ID)
			}
			out = append(out, b)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestGeneratorResumeSkipsAcknowledged: a generator resumed from a
// position with spans acknowledged above it generates every other message,
// in batches that stop at each span, and none of the spans.
func TestGeneratorResumeSkipsAcknowledged(t *testing.T) {
	// Acknowledged: below 10, [13, 15), [16, 18) and [20, 30).
	store := &memState{state: position(10, 13, 15, 16, 18, 20, 30), ok: true}
	g := vertex.Generator(func(i int64) int64 { return i }).WithCount(33)
	if err := g.Resume(store); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(genBatches(t, g, 100))
	if want := "[[10 11 12] [15] [18 19] [30 31 32]]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}

	// Acknowledged after Resume and before the first Read (the pipeline
	// acknowledges what it finds an earlier run wrote): skipped too, also
	// past the position Resume loaded.
	g = vertex.Generator(func(i int64) int64 { return i }).WithCount(33)
	if err := g.Resume(&memState{state: position(10, 20, 22), ok: true}); err != nil {
		t.Fatal(err)
	}
	for _, first := range []string{"10", "11", "25"} {
		if err := g.Ack(context.Background(), []vertex.Message[int64]{{ID: first}}); err != nil {
			t.Fatal(err)
		}
	}
	got = fmt.Sprint(genBatches(t, g, 100))
	if want := "[[12 13 14 15 16 17 18 19] [22 23 24] [26 27 28 29 30 31 32]]"; got != want {
		t.Fatalf("after acks past the position: batches %s, want %s", got, want)
	}
}

// TestGeneratorAckMerges: acknowledgements in any order, overlapping,
// repeated or below the position, leave the exact set acknowledged.
func TestGeneratorAckMerges(t *testing.T) {
	ctx := context.Background()
	store := &memState{state: position(10), ok: true}
	g := vertex.Generator(func(i int64) int64 { return i })
	if g.Acknowledged("1") {
		t.Fatal("a generator not resumed reports message 1 acknowledged")
	}
	if err := g.Resume(store); err != nil {
		t.Fatal(err)
	}
	ack := func(first, n int) {
		msgs := make([]vertex.Message[int64], n)
		msgs[0].ID = strconv.Itoa(first)
		if err := g.Ack(ctx, msgs); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		first, n int
		want     []byte
	}{
		{30, 5, position(10, 30, 35)},
		{20, 2, position(10, 20, 22, 30, 35)},
		{33, 4, position(10, 20, 22, 30, 37)}, // overlaps the end
		{22, 8, position(10, 20, 37)},         // touches both: merged
		{25, 3, position(10, 20, 37)},         // inside: nothing new
		{5, 3, position(10, 20, 37)},          // below the position
		{40, 1, position(10, 20, 37, 40, 41)}, // one message
		{8, 14, position(37, 40, 41)},         // from below to inside
		{37, 3, position(41)},                 // closes the last gap
	} {
		ack(step.first, step.n)
		if err := g.Close(); err != nil { // saves when something changed
			t.Fatal(err)
		}
		if !bytes.Equal(store.state, step.want) {
			t.Fatalf("after acking %d from %d: %x, want %x", step.n, step.first, store.state, step.want)
		}
		if step.first != 40 {
			continue
		}
		// Acknowledged: below 10, [20, 37) and 40.
		for id, want := range map[string]bool{"9": true, "10": false, "19": false, "20": true, "36": true,
			"37": false, "39": false, "40": true, "41": false, "x": false, "-1": false} {
			if got := g.Acknowledged(id); got != want {
				t.Errorf("Acknowledged(%q) = %v, want %v", id, got, want)
			}
		}
	}
}

func TestGeneratorResume(t *testing.T) {
	ctx := context.Background()
	store := &memState{state: binary.LittleEndian.AppendUint64(nil, 40), ok: true}
	g := vertex.Generator(func(i int64) int64 { return i * 10 }).WithCount(100)
	if err := g.Resume(store); err != nil {
		t.Fatal(err)
	}
	a, _ := g.Read(ctx, 10)
	b, _ := g.Read(ctx, 10)
	if a[0].ID != "40" || a[0].Value != 400 || b[0].ID != "50" {
		t.Fatalf("after resuming at 40, reads start at %s (value %d) and %s", a[0].ID, a[0].Value, b[0].ID)
	}
	// The later batch first: the position cannot pass the earlier one, and
	// keeps the batch above it.
	if err := g.Ack(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if want := position(40, 50, 60); store.saves != 1 || !bytes.Equal(store.state, want) {
		t.Fatalf("Close with 40-49 unacknowledged: %d saves of %x, want 1 of %x", store.saves, store.state, want)
	}
	time.Sleep(25 * time.Millisecond) // past the save throttle
	if err := g.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	if store.saves != 2 || len(store.state) != 8 || store.pos() != 60 {
		t.Fatalf("after acking both batches: %d saves, state %x; want 2 saves, the last at 60", store.saves, store.state)
	}
	c, _ := g.Read(ctx, 10)
	if err := g.Ack(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Within the throttle: saved by Close.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if store.pos() != 70 {
		t.Fatalf("position after Close = %d, want 70", store.pos())
	}
	if err := g.Ack(ctx, []vertex.Message[int64]{{ID: "x"}}); !errors.Is(err, vertex.ErrUnknownAck) {
		t.Fatalf("ack of a foreign ID: %v, want ErrUnknownAck", err)
	}
}

func TestGeneratorResumeRefusesBadState(t *testing.T) {
	for name, state := range map[string][]byte{
		"short":          {1, 2, 3},
		"negative":       binary.LittleEndian.AppendUint64(nil, 1<<63),
		"half a span":    position(4, 6)[:16],
		"span at acked":  position(4, 4, 6),
		"empty span":     position(4, 6, 6),
		"spans overlap":  position(4, 6, 9, 8, 10),
		"spans touch":    position(4, 6, 9, 9, 10),
		"spans unsorted": position(4, 12, 14, 6, 8),
	} {
		g := vertex.Generator(func(i int64) int64 { return i })
		if err := g.Resume(&memState{state: state, ok: true}); err == nil {
			t.Errorf("%s: Resume accepted %x", name, state)
		}
	}
}

func TestGeneratorWithoutResumeAcksNothing(t *testing.T) {
	g := vertex.Generator(func(i int64) int64 { return i })
	msgs, _ := g.Read(context.Background(), 3)
	if err := g.Ack(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
