package http_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/http"
)

// answer is a response as the tests look at it.
type answer struct {
	status     int
	body       string
	retryAfter string
}

// post sends body with contentType (and an optional Idempotency-Key) to
// url and returns the answer.
func post(t *testing.T, client *nethttp.Client, url, contentType, body string, key ...string) answer {
	t.Helper()
	req, err := nethttp.NewRequest(nethttp.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return answer{}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(key) > 0 {
		req.Header.Set(http.IdempotencyKeyHeader, key[0])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Error(err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get("Retry-After")}
}

// postAsync posts in a goroutine; the answer comes on the channel.
func postAsync(t *testing.T, client *nethttp.Client, url, contentType, body string, key ...string) <-chan answer {
	ch := make(chan answer, 1)
	go func() { ch <- post(t, client, url, contentType, body, key...) }()
	return ch
}

// serve mounts src in a test server, closed (with src) at the end.
func serve(t *testing.T, src *http.Source) *httptest.Server {
	t.Helper()
	if err := src.Validate(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(src)
	t.Cleanup(func() {
		src.Close() // answers what still waits, so that srv.Close does not wait for it
		srv.Close()
	})
	return srv
}

// readN reads until n records came, within a minute.
func readN(t *testing.T, src *http.Source, n int) []vertex.Message[[]byte] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []vertex.Message[[]byte]
	for len(out) < n {
		msgs, err := src.Read(ctx, n-len(out))
		if err != nil {
			t.Fatalf("read after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}

// values lists the values of msgs.
func values(msgs []vertex.Message[[]byte]) string {
	var v []string
	for _, m := range msgs {
		v = append(v, string(m.Value))
	}
	return fmt.Sprint(v)
}

// TestSourceAnswersOnceAcknowledged: a POST is answered 200 only once the
// pipeline acknowledged every one of its records, read in two batches.
func TestSourceAnswersOnceAcknowledged(t *testing.T) {
	src := http.NewSource()
	srv := serve(t, src)
	got := postAsync(t, srv.Client(), srv.URL, "application/x-ndjson", "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
	first := readN(t, src, 2)
	rest := readN(t, src, 1)
	if v := values(append(first, rest...)); v != `[{"n":1} {"n":2} {"n":3}]` {
		t.Fatalf("records %s", v)
	}
	if n := src.Buffered(); n != 3 {
		t.Fatalf("Buffered %d before the acknowledgement, want 3", n)
	}
	if err := src.Ack(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-got:
		t.Fatalf("answered %v before every record was acknowledged", a)
	default:
	}
	if err := src.Ack(context.Background(), rest); err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.status != 200 || a.body != `{"accepted":3}` {
		t.Fatalf("answer %+v, want 200 {\"accepted\":3}", a)
	}
	if n := src.Buffered(); n != 0 {
		t.Fatalf("Buffered %d after the acknowledgement, want 0", n)
	}
	if err := src.Ack(context.Background(), rest); !errors.Is(err, vertex.ErrUnknownAck) {
		t.Fatalf("second Ack: %v, want ErrUnknownAck", err)
	}
}

// TestSourcePushesBack: records that do not fit in Capacity are refused
// whole with 503 and Retry-After; once the pipeline acknowledges, they fit.
func TestSourcePushesBack(t *testing.T) {
	src := http.NewSource(http.Capacity(3), http.RetryAfter(1500*time.Millisecond))
	srv := serve(t, src)
	first := postAsync(t, srv.Client(), srv.URL, "text/plain", "a\nb\n")
	held := readN(t, src, 2)
	a := post(t, srv.Client(), srv.URL, "text/plain", "c\nd\n")
	if a.status != 503 || a.retryAfter != "2" || !strings.Contains(a.body, "Capacity 3") {
		t.Fatalf("answer to a batch that does not fit: %+v, want 503 with Retry-After 2 naming the capacity", a)
	}
	if n := src.Buffered(); n != 2 {
		t.Fatalf("Buffered %d after the refusal, want 2: nothing of the refused batch is held", n)
	}
	if a := post(t, srv.Client(), srv.URL, "text/plain", "1\n2\n3\n4\n"); a.status != 413 || !strings.Contains(a.body, "4 records") {
		t.Fatalf("answer to a batch larger than the capacity: %+v, want 413", a)
	}
	if err := src.Ack(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	if a := <-first; a.status != 200 {
		t.Fatalf("first answer %+v", a)
	}
	second := postAsync(t, srv.Client(), srv.URL, "text/plain", "c\nd\n")
	msgs := readN(t, src, 2)
	src.Ack(context.Background(), msgs)
	if a := <-second; a.status != 200 || values(msgs) != "[c d]" {
		t.Fatalf("answer %+v, records %s", a, values(msgs))
	}
}

// TestSourceRefusesBadRequests: every request the source cannot take is
// answered with a status and a message naming the problem, and nothing of
// it is held.
func TestSourceRefusesBadRequests(t *testing.T) {
	src := http.NewSource(http.MaxBodyBytes(64))
	srv := serve(t, src)
	for _, c := range []struct {
		method, ct, body string
		status           int
		says             string
	}{
		{"POST", "application/json", `[1, 2,, 3]`, 400, "invalid JSON at byte 6"},
		{"POST", "application/x-ndjson", "1\nnope\n", 400, "line 2 is not JSON"},
		{"POST", "application/x-www-form-urlencoded", "a=1", 415, "application/x-ndjson"},
		{"POST", "text/plain", strings.Repeat("x", 65), 413, "MaxBodyBytes (64)"},
		{"GET", "", "", 405, "POST"},
	} {
		req, _ := nethttp.NewRequest(c.method, srv.URL, strings.NewReader(c.body))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.says) {
			t.Errorf("%s %s %q: %d %q, want %d saying %q", c.method, c.ct, c.body, resp.StatusCode, b, c.status, c.says)
		}
	}
	if a := post(t, srv.Client(), srv.URL, "application/json", "[]"); a.status != 200 || a.body != `{"accepted":0}` {
		t.Errorf("an empty batch: %+v, want 200 accepted 0", a)
	}
	if n := src.Buffered(); n != 0 {
		t.Fatalf("Buffered %d after refused requests", n)
	}
}

// TestSourceIdempotencyKey: records of a request with an Idempotency-Key
// have IDs {key}/{index}; the same request sent again while the first
// waits joins it (its records are not added again) and is answered with
// it; sent after the first was answered, it is taken again, with the same
// IDs.
func TestSourceIdempotencyKey(t *testing.T) {
	src := http.NewSource()
	srv := serve(t, src)
	first := postAsync(t, srv.Client(), srv.URL, "application/json", `["x", "y"]`, "batch-7")
	msgs := readN(t, src, 2)
	if msgs[0].ID != "batch-7/0" || msgs[1].ID != "batch-7/1" {
		t.Fatalf("IDs %s %s, want batch-7/0 batch-7/1", msgs[0].ID, msgs[1].ID)
	}
	again := postAsync(t, srv.Client(), srv.URL, "application/json", `["x", "y"]`, "batch-7")
	for deadline := time.Now().Add(time.Minute); http.Joins(src) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request sent again did not join the first within a minute")
		}
	}
	if n := src.Buffered(); n != 2 {
		t.Fatalf("Buffered %d with the request joined, want 2", n)
	}
	src.Ack(context.Background(), msgs)
	for _, ch := range []<-chan answer{first, again} {
		if a := <-ch; a.status != 200 || a.body != `{"accepted":2}` {
			t.Fatalf("answer %+v", a)
		}
	}
	third := postAsync(t, srv.Client(), srv.URL, "application/json", `["x", "y"]`, "batch-7")
	msgs = readN(t, src, 2)
	if msgs[0].ID != "batch-7/0" || msgs[1].ID != "batch-7/1" {
		t.Fatalf("IDs of the request sent after the first was answered: %s %s", msgs[0].ID, msgs[1].ID)
	}
	src.Ack(context.Background(), msgs)
	if a := <-third; a.status != 200 {
		t.Fatalf("answer %+v", a)
	}
}

// TestSourceCloseAnswersWaiting: Close answers a request still waiting 503,
// and refuses new ones; Read then ends.
func TestSourceCloseAnswersWaiting(t *testing.T) {
	src := http.NewSource()
	srv := serve(t, src)
	waiting := postAsync(t, srv.Client(), srv.URL, "", "one record")
	readN(t, src, 1)
	src.Close()
	if a := <-waiting; a.status != 503 || a.retryAfter != "1" {
		t.Fatalf("waiting request after Close: %+v, want 503 with Retry-After", a)
	}
	if a := post(t, srv.Client(), srv.URL, "", "late"); a.status != 503 || !strings.Contains(a.body, "closed") {
		t.Fatalf("request after Close: %+v", a)
	}
	if _, err := src.Read(context.Background(), 1); !errors.Is(err, io.EOF) {
		t.Fatalf("Read after Close: %v, want io.EOF", err)
	}
}

// TestSourceAckTimeout: a request not acknowledged within AckTimeout is
// answered 503; its records stay held until the pipeline acknowledges
// them.
func TestSourceAckTimeout(t *testing.T) {
	src := http.NewSource(http.AckTimeout(time.Millisecond))
	srv := serve(t, src)
	a := post(t, srv.Client(), srv.URL, "", "slow")
	if a.status != 503 || !strings.Contains(a.body, "AckTimeout") {
		t.Fatalf("answer %+v, want 503 naming AckTimeout", a)
	}
	if n := src.Buffered(); n != 1 {
		t.Fatalf("Buffered %d after the timeout, want 1", n)
	}
	src.Ack(context.Background(), readN(t, src, 1))
	if n := src.Buffered(); n != 0 {
		t.Fatalf("Buffered %d after the acknowledgement", n)
	}
}

// TestSourceListen: with Listen the source serves an address of its own
// from the first Read until Close; an address it cannot listen on fails
// Read, naming it.
func TestSourceListen(t *testing.T) {
	src := http.NewSource(http.Listen("127.0.0.1:0"))
	if src.Addr() != nil {
		t.Fatal("an address before the first Read")
	}
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan []vertex.Message[[]byte], 1)
	go func() {
		msgs, _ := src.Read(ctx, 10)
		read <- msgs
	}()
	deadline := time.Now().Add(time.Minute)
	for src.Addr() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if src.Addr() == nil {
		t.Fatal("no address within a minute of the first Read")
	}
	client := &nethttp.Client{Transport: &nethttp.Transport{}}
	defer client.CloseIdleConnections()
	got := postAsync(t, client, "http://"+src.Addr().String()+"/any/path", "", "hello")
	msgs := <-read
	cancel()
	src.Ack(context.Background(), msgs)
	if a := <-got; a.status != 200 || values(msgs) != "[hello]" {
		t.Fatalf("answer %+v, records %s", a, values(msgs))
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := http.NewSource(http.Listen(ln.Addr().String()))
	defer taken.Close()
	if _, err := taken.Read(context.Background(), 1); err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "Listen") {
		t.Fatalf("Read on an address in use: %v, want an error naming it and Listen", err)
	}
}

// TestSourceValidate: bad options are refused, naming them.
func TestSourceValidate(t *testing.T) {
	for _, c := range []struct {
		opt    http.SourceOption
		option string
	}{
		{http.Capacity(0), "Capacity"},
		{http.RetryAfter(0), "RetryAfter"},
		{http.MaxBodyBytes(-1), "MaxBodyBytes"},
		{http.AckTimeout(-time.Second), "AckTimeout"},
	} {
		var oe *vertex.OptionError
		if err := http.NewSource(c.opt).Validate(); !errors.As(err, &oe) || oe.Option != c.option || oe.Package != "http" {
			t.Errorf("Validate: %v, want an OptionError of http naming %s", err, c.option)
		}
	}
}
