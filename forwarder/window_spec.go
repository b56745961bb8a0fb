package forwarder

import (
	"time"

	"github.com/runnel-dev/runnel/internal/window"
	"github.com/runnel-dev/runnel/vertex"
)

// windowSpec is w as the window arithmetic computes with it (Unix
// nanoseconds).
func windowSpec(w vertex.Windowing) window.Spec {
	return window.Spec{Kind: uint8(w.Kind), Length: int64(w.Length), Slide: int64(w.Slide),
		Gap: int64(w.Gap), Offset: int64(w.Offset), AllowedLateness: int64(w.AllowedLateness)}
}

// toWindow returns iv as the vertex.Window a result reports, in UTC.
func toWindow(iv window.Interval) vertex.Window {
	return vertex.Window{Start: time.Unix(0, iv.Start).UTC(), End: time.Unix(0, iv.End).UTC()}
}
