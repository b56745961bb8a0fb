package natsmsg

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// Take waits for a first message, then takes what is queued without
// waiting; it returns nothing when the wait passes or ctx ends.
func TestQueueTake(t *testing.T) {
	q := NewQueue[int](4)
	buf := make([]int, 3)
	if n, err := q.Take(context.Background(), time.Millisecond, buf); n != 0 || err != nil {
		t.Fatalf("empty queue: %d, %v", n, err)
	}
	for i := range 4 {
		if !q.Put(i) {
			t.Fatal("put refused")
		}
	}
	if n, _ := q.Take(context.Background(), time.Hour, buf); n != 3 || !reflect.DeepEqual(buf, []int{0, 1, 2}) {
		t.Fatalf("took %d: %v", n, buf[:n])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, _ := q.Take(ctx, time.Hour, buf); n != 1 || buf[0] != 3 {
		t.Fatalf("took %d: %v", n, buf[:n])
	}
	if n, err := q.Take(ctx, time.Hour, buf); n != 0 || err != context.Canceled {
		t.Fatalf("cancelled: %d, %v", n, err)
	}
	q.Close()
	if q.Put(1) {
		t.Fatal("put into a closed queue")
	}
}
