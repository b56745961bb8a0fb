package tracker_test

import (
	"fmt"
	"time"

	"github.com/runnel-dev/runnel/tracker"
)

func Example() {
	tr := tracker.New[string](2) // the ack payload here is a message id
	base := time.UnixMilli(1_000).UTC()
	_ = tr.Insert(0, 10, base, "m10")
	_ = tr.Insert(0, 11, base.Add(time.Second), "m11")
	_ = tr.Insert(1, 4, base.Add(2*time.Second), "m4")

	// Offset 11 is acked first: the commit point of partition 0 stays at 10.
	id, _ := tr.Delete(0, 11)
	low, _ := tr.LowestOffset(0)
	wm, _ := tr.LowestWatermark()
	fmt.Println(id, low, wm.UnixMilli(), tr.Len())
	// Output: m11 10 1000 2
}
