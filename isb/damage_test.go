package isb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// damagedTopic is a topic of two partitions holding 0..9 in partition 0
// and 100..109 in partition 1, with the record at offset 4 of partition 0
// damaged.
func damagedTopic(t *testing.T) *isb.Topic[int] {
	t.Helper()
	ctx := context.Background()
	b := isbtest.NewSliceBackend[int]()
	tp, err := isb.NewTopic[int]("nums", b, isb.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	pr := tp.Producer(isb.BySelector(func(i, n int) int { return i / 100 }))
	for i := range 10 {
		if err := pr.ProduceBatch(ctx, []int{i, 100 + i}); err != nil {
			t.Fatal(err)
		}
	}
	b.Damage(0, 4)
	return tp
}

// One damaged record stalls neither the consumer's other partition nor,
// after Skip, its own: the error names the partition and offset, comes in
// that partition's turn, and Skip steps past exactly that record,
// committing it.
func TestDamagedPartitionDoesNotStallOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tp := damagedTopic(t)
	core, logs := observer.New(zap.InfoLevel)
	c, err := tp.PullConsumer("g", isb.BatchSize(3), isb.Logger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Skip(0); !errors.Is(err, isb.ErrNotDamaged) {
		t.Fatalf("Skip before any damage was read = %v, want ErrNotDamaged", err)
	}
	got := map[int][]int{}
	var errs []string
	for len(got[1]) < 10 {
		b, err := c.Pull(ctx)
		if err != nil {
			var re *isb.ReadError
			if !errors.As(err, &re) || !errors.Is(err, isb.ErrCorrupt) {
				t.Fatalf("Pull: %v, want a *isb.ReadError matching ErrCorrupt", err)
			}
			errs = append(errs, re.Error())
			if re.Partition != 0 || re.Offset != 4 {
				t.Fatalf("read error at partition %d offset %d, want 0/4", re.Partition, re.Offset)
			}
			continue
		}
		got[b.Partition] = append(got[b.Partition], b.Items...)
	}
	if !slices.Equal(got[1], []int{100, 101, 102, 103, 104, 105, 106, 107, 108, 109}) || !slices.Equal(got[0], []int{0, 1, 2, 3}) {
		t.Fatalf("delivered %v before Skip; want partition 1 whole and partition 0 up to the damage", got)
	}
	if len(errs) == 0 {
		t.Fatal("the damaged record was never reported")
	}
	if _, err := c.Skip(1); !errors.Is(err, isb.ErrNotDamaged) {
		t.Fatalf("Skip of an undamaged partition = %v, want ErrNotDamaged", err)
	}
	off, err := c.Skip(0)
	if err != nil || off != 4 {
		t.Fatalf("Skip(0) = %d, %v; want 4", off, err)
	}
	if _, err := c.Skip(0); !errors.Is(err, isb.ErrNotDamaged) {
		t.Fatalf("a second Skip = %v, want ErrNotDamaged (it never steps past readable data)", err)
	}
	b, err := c.Pull(ctx)
	if err != nil || b.Partition != 0 || b.Offset != 5 || !slices.Equal(b.Items, []int{5, 6, 7}) {
		t.Fatalf("Pull after Skip = %+v, %v; want partition 0 from offset 5", b, err)
	}
	if c.Skipped() != 1 {
		t.Fatalf("Skipped() = %d, want 1", c.Skipped())
	}
	if l := logs.FilterMessageSnippet("skipped a damaged record").All(); len(l) != 1 ||
		l[0].ContextMap()["partition"] != int64(0) || l[0].ContextMap()["offset"] != int64(4) {
		t.Fatalf("Skip logged %v, want one line naming partition 0 offset 4", logs.All())
	}
	// Auto commit: everything up to the damaged record and the skip
	// itself were committed; the last batch commits with the next Pull.
	if err := c.Commit(); err != nil {
		t.Fatal(err)
	}
	if p := tp.Pending("g"); p != 2 {
		t.Fatalf("Pending = %d, want 2 (partition 0 offsets 8 and 9)", p)
	}
}

// Under manual commit Skip commits only when everything before the damaged
// record is committed: it never commits items still in flight.
func TestSkipNeverCommitsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tp := damagedTopic(t)
	cs, err := tp.PullConsumers("g", 2, isb.BatchSize(10), isb.ManualCommit())
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	b, err := c.Pull(ctx)
	if err != nil || !slices.Equal(b.Items, []int{0, 1, 2, 3}) {
		t.Fatalf("Pull = %+v, %v", b, err)
	}
	if _, err := c.Pull(ctx); !errors.Is(err, isb.ErrCorrupt) {
		t.Fatalf("Pull at the damage = %v, want ErrCorrupt", err)
	}
	if _, err := c.Skip(0); err != nil {
		t.Fatal(err)
	}
	if p := tp.Pending("g"); p != 20 {
		t.Fatalf("Pending = %d after Skip with 0..3 uncommitted, want 20", p)
	}
	// Delivered now covers the skipped record, so committing past it works.
	if err := c.CommitTo(0, 5); err != nil {
		t.Fatal(err)
	}
	if p := tp.Pending("g"); p != 15 {
		t.Fatalf("Pending = %d, want 15", p)
	}
}

// A push consumer reports a damaged record with its partition and offset,
// steps past it and handles everything else: it never retries it forever.
func TestPushSkipsDamagedRecord(t *testing.T) {
	for _, manual := range []bool{false, true} {
		name := "auto commit"
		opts := []isb.ConsumerOption{isb.BatchSize(3), isb.Backoff(time.Millisecond, time.Millisecond)}
		if manual {
			name = "manual commit"
			opts = append(opts, isb.ManualCommit())
		}
		t.Run(name, func(t *testing.T) {
			tp := damagedTopic(t)
			var mu sync.Mutex
			var handled []int
			var reports []string
			h := func(_ context.Context, b isb.Batch[int]) error {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, b.Items...)
				return nil
			}
			onErr := func(p int, off int64, err error) {
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, isb.ErrCorrupt) {
					reports = append(reports, fmt.Sprintf("%d/%d", p, off))
				}
			}
			pc, err := tp.Subscribe("g", h, append(opts, isb.OnError(onErr))...)
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for tp.Pending("g") != 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if err := pc.Stop(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(handled)
			want := []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109}
			if !slices.Equal(handled, want) {
				t.Fatalf("handled %v, want %v", handled, want)
			}
			if !slices.Equal(reports, []string{"0/4"}) || pc.Skipped() != 1 {
				t.Fatalf("reports %v, Skipped %d; want one report at 0/4 and one skip", reports, pc.Skipped())
			}
		})
	}
}
