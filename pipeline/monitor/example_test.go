package monitor_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/pipeline/monitor"
	"github.com/runnel-dev/runnel/vertex"
)

// Register puts a pipeline's metrics on the user's registry; Handler
// serves the page, /status and /metrics, mounted here under /pipeline/.
func Example() {
	p := pipeline.New("words")
	words := pipeline.Source(p, "words", vertex.FromSlice([]string{"a", "b", "c"}))
	pipeline.Sink(p, "out", words, vertex.Blackhole[string]())

	reg := prometheus.NewRegistry()
	if err := monitor.Register(reg, p); err != nil {
		fmt.Println(err)
		return
	}
	h, err := monitor.Handler(p, monitor.Gatherer(reg))
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/pipeline/", http.StripPrefix("/pipeline", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if err := p.Run(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	res, err := http.Get(srv.URL + "/pipeline/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "runnel_forwarder_ack_total") {
			fmt.Println(line)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// runnel_forwarder_ack_total{pipeline="words",replica="0",vertex="out",vertex_type="sink"} 3
	// runnel_forwarder_ack_total{pipeline="words",replica="0",vertex="words",vertex_type="source"} 3
}
