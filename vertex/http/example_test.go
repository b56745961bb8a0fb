package http_test

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"

	"github.com/runnel-dev/runnel/pipeline"
	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/http"
)

// The source mounted in a server of the caller's: a POST of an NDJSON
// batch is answered 200 once the pipeline has its records.
func ExampleNewSource() {
	src := http.NewSource(http.Capacity(1000))
	mux := nethttp.NewServeMux()
	mux.Handle("POST /ingest", src)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	got := make(chan vertex.Message[[]byte], 10)
	p := pipeline.New("ingest")
	pipeline.Sink(p, "out", pipeline.Source(p, "in", src), vertex.ToChannel(got), vertex.Concurrency(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error)
	go func() { ran <- p.Run(ctx) }()

	resp, err := srv.Client().Post(srv.URL+"/ingest", "application/x-ndjson", strings.NewReader("{\"n\":1}\n{\"n\":2}\n"))
	if err != nil {
		fmt.Println(err)
		cancel()
		<-ran
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))
	fmt.Println(string((<-got).Value), string((<-got).Value))
	cancel()
	fmt.Println(<-ran)
	// Output:
	// 200 {"accepted":2}
	// {"n":1} {"n":2}
	// <nil>
}

// The sink POSTs each batch as NDJSON; a 2xx delivers it.
func ExampleNewSink() {
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Printf("%s %q\n", r.Header.Get("Content-Type"), b)
	}))
	defer srv.Close()
	sink := http.NewSink(srv.URL)
	defer sink.Close()
	res, err := sink.Write(context.Background(), []vertex.Message[[]byte]{{ID: "a", Value: []byte(`{"n":1}`)}, {ID: "b", Value: []byte(`[2]`)}})
	fmt.Println(res, err)
	// Output:
	// application/x-ndjson "{\"n\":1}\n[2]\n"
	// [ok ok] <nil>
}
