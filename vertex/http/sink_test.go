package http_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/http"
)

// recorder is a test server's handler: it records each request and
// answers with the next status of its script (200 once the script is
// used up).
type recorder struct {
	mu       sync.Mutex
	statuses []int
	reqs     []recorded
}

type recorded struct {
	contentType, key, auth, body string
}

func (r *recorder) ServeHTTP(w nethttp.ResponseWriter, req *nethttp.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{req.Header.Get("Content-Type"), req.Header.Get(http.IdempotencyKeyHeader), req.Header.Get("Authorization"), string(b)})
	status := 200
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	r.mu.Unlock()
	if status == nethttp.StatusFound {
		w.Header().Set("Location", "/elsewhere")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "answer %d", status)
}

// msgs makes messages with IDs m0, m1, ... and the given values.
func msgs(vals ...string) []vertex.Message[[]byte] {
	out := make([]vertex.Message[[]byte], len(vals))
	for i, v := range vals {
		out[i] = vertex.Message[[]byte]{ID: fmt.Sprintf("m%d", i), Value: []byte(v)}
	}
	return out
}

// newSink makes a validated sink closed at the end.
func newSink(t *testing.T, url string, opts ...http.SinkOption) *http.Sink {
	t.Helper()
	s := http.NewSink(url, opts...)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSinkPostsBatches: a batch is one POST in the sink's format, with the
// headers given, and an Idempotency-Key that is the same for the same
// batch and differs for another.
func TestSinkPostsBatches(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct {
		format http.Format
		ct     string
		body   string
	}{
		{http.NDJSON, "application/x-ndjson", "{\"a\":1}\n[2]\n"},
		{http.JSONArray, "application/json", `[{"a":1},[2]]`},
		{http.Lines, "text/plain; charset=utf-8", "{\"a\":1}\n[2]\n"},
	} {
		s := newSink(t, srv.URL, http.WithFormat(c.format), http.Header("Authorization", "Bearer t"))
		if res, err := s.Write(ctx, msgs(`{"a":1}`, `[2]`)); err != nil || fmt.Sprint(res) != "[ok ok]" {
			t.Fatalf("%v: write %v %v", c.format, res, err)
		}
		got := rec.reqs[len(rec.reqs)-1]
		if got.contentType != c.ct || got.body != c.body || got.auth != "Bearer t" || len(got.key) != 32 {
			t.Fatalf("%v: request %+v, want Content-Type %q body %q", c.format, got, c.ct, c.body)
		}
	}
	if k := rec.reqs; k[0].key != k[1].key || k[1].key != k[2].key {
		t.Fatalf("keys of the same batch differ: %s %s %s", k[0].key, k[1].key, k[2].key)
	}
	s := newSink(t, srv.URL)
	s.Write(ctx, msgs(`1`))
	if k := rec.reqs; k[3].key == k[0].key {
		t.Fatal("another batch has the same key")
	}
}

// TestSinkAnswers: what each answer makes of the batch's messages.
func TestSinkAnswers(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string
	}{
		{500, "[retry retry]"},
		{503, "[retry retry]"},
		{429, "[retry retry]"},
		{408, "[retry retry]"},
		{400, "[fallback fallback]"},
		{404, "[fallback fallback]"},
		{nethttp.StatusFound, "[fallback fallback]"}, // not followed
		{204, "[ok ok]"},
	} {
		rec := &recorder{statuses: []int{c.status}}
		srv := httptest.NewServer(rec)
		s := newSink(t, srv.URL)
		res, err := s.Write(context.Background(), msgs(`1`, `2`))
		srv.Close()
		if fmt.Sprint(res) != c.want || len(rec.reqs) != 1 {
			t.Errorf("status %d: results %v after %d requests, want %s after 1", c.status, res, len(rec.reqs), c.want)
		}
		if c.want == "[ok ok]" {
			if err != nil {
				t.Errorf("status %d: error %v", c.status, err)
			}
			continue
		}
		// Each message's cause is the status, with the answer's body.
		var we *vertex.WriteError
		var se *http.StatusError
		if !errors.As(err, &we) || len(we.Causes) != 2 || !errors.As(we.Causes[1], &se) || se.Status != c.status ||
			!errors.Is(err, http.ErrStatus) || !strings.Contains(se.Error(), fmt.Sprintf("answer %d", c.status)) {
			t.Errorf("status %d: error %v, want a WriteError with a StatusError per message", c.status, err)
		}
	}
}

// TestSinkConnectionRefused: a server that is not there retries every
// message.
func TestSinkConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	url := srv.URL
	srv.Close()
	s := newSink(t, url)
	res, err := s.Write(context.Background(), msgs(`1`, `2`))
	var we *vertex.WriteError
	var ue *neturl.Error
	if fmt.Sprint(res) != "[retry retry]" || !errors.As(err, &we) || len(we.Causes) != 2 || !errors.As(we.Causes[0], &ue) ||
		!errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("results %v, error %v; want [retry retry] with connection refused as the cause", res, err)
	}
}

// TestSinkUnencodable: a value the format cannot carry goes to the
// fallback without being sent; a batch of only such values sends nothing.
func TestSinkUnencodable(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	s := newSink(t, srv.URL)
	res, err := s.Write(context.Background(), msgs(`1`, `not json`, `3`))
	var we *vertex.WriteError
	if fmt.Sprint(res) != "[ok fallback ok]" || len(rec.reqs) != 1 || rec.reqs[0].body != "1\n3\n" {
		t.Fatalf("results %v, requests %+v", res, rec.reqs)
	}
	if !errors.As(err, &we) || we.Causes[0] != nil || !errors.Is(we.Causes[1], http.ErrUnencodable) || we.Causes[2] != nil {
		t.Fatalf("error %v, want ErrUnencodable as the cause of the second message only", err)
	}
	res, _ = s.Write(context.Background(), msgs(`nope`))
	if fmt.Sprint(res) != "[fallback]" || len(rec.reqs) != 1 {
		t.Fatalf("results %v after %d requests, want [fallback] and no request", res, len(rec.reqs))
	}
}

// TestSinkValidate: bad URLs and options are refused, naming them.
func TestSinkValidate(t *testing.T) {
	for _, c := range []struct {
		sink   *http.Sink
		option string
		says   string
	}{
		{http.NewSink("ftp://x/y"), "NewSink", "http or https"},
		{http.NewSink("http://"), "NewSink", "no host"},
		{http.NewSink(":bad"), "NewSink", "not a URL"},
		{http.NewSink("http://x", http.WithFormat(http.Raw)), "WithFormat", "NDJSON"},
		{http.NewSink("http://x", http.Client(nil)), "Client", "nil"},
	} {
		var oe *vertex.OptionError
		err := c.sink.Validate()
		if !errors.As(err, &oe) || oe.Option != c.option || oe.Package != "http" || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Validate: %v, want an OptionError of http naming %s saying %q", err, c.option, c.says)
		}
		c.sink.Close()
	}
}
