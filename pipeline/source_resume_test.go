package pipeline

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/vconfig"
	"github.com/runnel-dev/runnel/vertex"
)

// valueCounter is a sink counting the values it receives.
type valueCounter struct {
	mu     sync.Mutex
	counts map[int64]int
}

func (c *valueCounter) Write(_ context.Context, msgs []vertex.Message[int64]) ([]vertex.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[int64]int{}
	}
	for _, m := range msgs {
		c.counts[m.Value]++
	}
	return nil, nil
}

// prewrite writes the generator's messages [from, to) to the buffer of
// vertex v of pipeline res, as a run killed before it saved its position
// would have left them.
func prewrite(t *testing.T, c *config, v string, from, to int64) {
	t.Helper()
	topic, err := openTopic[int64](c, BufferSpec{Pipeline: "res", Vertex: v, Partitions: 1, Capacity: vconfig.DefaultBufferCapacity})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []vertex.Message[int64]
	for i := from; i < to; i++ {
		msgs = append(msgs, vertex.Message[int64]{ID: strconv.FormatInt(i, 10), Value: i})
	}
	if err := topic.Producer(nil).ProduceBatch(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if err := topic.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResumedSourceFindsWhatItWrote: a generator whose saved position (5)
// is behind what its last run wrote, all of 0-99 to sink a's buffer, 0-49
// only to b's (killed between the two writes) and 0-99 to c's, which
// another source writes to too. Resumed, it hands over nothing a and b
// have: a and b get 0-149 exactly once, b's 50-99 written again but not
// 0-2, which the position covers, though b's anchor lies above them; c, whose
// buffer it does not read back (the other source's IDs would be taken for
// its own), gets everything at least once. The state saved at the end
// covers all 150 messages, with anchors at the buffers' tails. Without a
// state file every retained record may be the source's: the same holds.
func TestResumedSourceFindsWhatItWrote(t *testing.T) {
	for _, withState := range []bool{true, false} {
		t.Run(fmt.Sprintf("state=%v", withState), func(t *testing.T) {
			dir := t.TempDir()
			c, err := newConfig([]Option{WithStorage(MMap(dir))})
			if err != nil {
				t.Fatal(err)
			}
			prewrite(t, &c, "a", 0, 100)
			prewrite(t, &c, "b", 0, 50)
			prewrite(t, &c, "c", 0, 100)
			file := filepath.Join(dir, "res", "gen"+stateSuffix)
			if withState {
				// Position 5; b's anchor 3: 0-2 are found in a only, but
				// the position covers them (written to b below its anchor).
				s := savedState{state: binary.LittleEndian.AppendUint64(nil, 5), anchors: map[string][]int64{"a": {0}, "b": {3}}}
				if err := writeSynced(file, encodeState(s)); err != nil {
					t.Fatal(err)
				}
			} // else no state: every retained record may be the source's

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p := New("res", WithStorage(MMap(dir)))
			gen := Source(p, "gen", vertex.Generator(func(i int64) int64 { return i }).WithCount(150), vertex.BatchSize(20))
			other := Source(p, "other", vertex.Generator(func(i int64) int64 { return 1000 + i }).WithCount(10))
			var a, b, cc valueCounter
			Sink(p, "a", gen, &a)
			Sink(p, "b", gen, &b)
			Sink(p, "c", Join(gen, other), &cc)
			if err := p.Run(ctx); err != nil {
				t.Fatal(err)
			}
			for name, s := range map[string]*valueCounter{"a": &a, "b": &b} {
				for i := range int64(150) {
					if n := s.counts[i]; n != 1 {
						t.Errorf("sink %s got message %d %d times, want 1", name, i, n)
					}
				}
				if len(s.counts) != 150 {
					t.Errorf("sink %s got %d distinct messages, want 150", name, len(s.counts))
				}
			}
			for i := range int64(150) {
				if cc.counts[i] < 1 {
					t.Errorf("sink c never got message %d", i)
				}
			}
			for i := range int64(10) {
				if n := cc.counts[1000+i]; n != 1 {
					t.Errorf("sink c got the other source's message %d %d times, want 1", i, n)
				}
			}
			saved, ok, err := readState(fileState(file))
			if err != nil || !ok {
				t.Fatalf("state after the run: %v, %v", ok, err)
			}
			// 150 messages and the end of stream in each buffer.
			want := fmt.Sprint(map[string][]int64{"a": {151}, "b": {151}})
			if len(saved.state) != 8 || binary.LittleEndian.Uint64(saved.state) != 150 || fmt.Sprint(saved.anchors) != want {
				t.Errorf("state after the run: position %x, anchors %v; want 150, %s", saved.state, saved.anchors, want)
			}
		})
	}
}
