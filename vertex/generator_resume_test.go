package vertex_test

import (
	"context"
	"encoding/binary"
	"errors"
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

func TestGeneratorResume(t *testing.T) {
	ctx := context.Background()
	store := &memState{state: binary.LittleEndian.AppendUint64(nil, 40), ok: true}
	g := vertex.Generator(func(i int64) int64 { return i * 10 }, vertex.Count(100))
	if err := g.Resume(store); err != nil {
		t.Fatal(err)
	}
	a, _ := g.Read(ctx, 10)
	b, _ := g.Read(ctx, 10)
	if a[0].ID != "40" || a[0].Value != 400 || b[0].ID != "50" {
		t.Fatalf("after resuming at 40, reads start at %s (value %d) and %s", a[0].ID, a[0].Value, b[0].ID)
	}
	// The later batch first: the position cannot pass the earlier one.
	if err := g.Ack(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if store.saves != 0 {
		t.Fatalf("saved position %d while message 40 was unacknowledged", store.pos())
	}
	time.Sleep(25 * time.Millisecond) // past the save throttle
	if err := g.Ack(ctx, a); err != nil {
		t.Fatal(err)
	}
	if store.saves != 1 || store.pos() != 60 {
		t.Fatalf("after acking both batches: %d saves, position %d; want 1 save at 60", store.saves, store.pos())
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
		"short":    {1, 2, 3},
		"negative": binary.LittleEndian.AppendUint64(nil, 1<<63),
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
