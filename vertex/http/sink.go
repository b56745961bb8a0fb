package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/vertex"
)

// Sink is the HTTP sink [NewSink] returns: a vertex.Sink that POSTs each
// batch to a URL, and an io.Closer. See the package doc.
type Sink struct {
	cfg  sinkConfig
	own  *http.Transport // the default client's, whose idle connections Close closes
	bufs sync.Pool       // *[]byte bodies
}

// sinkTimeout bounds a POST of the default client.
const sinkTimeout = 30 * time.Second

// errorBodyBytes is how much of a failed response's body the cause keeps.
const errorBodyBytes = 512

// NewSink returns a sink that POSTs each batch the pipeline gives it to
// url, as one body in NDJSON (or the WithFormat):
//
//	sink := http.NewSink("https://collector.example/ingest", http.Header("Authorization", "Bearer "+token))
//
// Bad options are reported by Validate, which the pipeline calls before it
// starts.
func NewSink(url string, opts ...SinkOption) *Sink {
	own := http.DefaultTransport.(*http.Transport).Clone()
	s := &Sink{own: own, cfg: sinkConfig{url: url, client: &http.Client{
		Transport: own,
		Timeout:   sinkTimeout,
		// A redirected POST may come back a GET without its body, and
		// answer 200 for records it never saw: a redirect is an answer
		// like any other non-2xx.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}}
	for _, o := range opts {
		o(&s.cfg)
	}
	return s
}

var (
	_ vertex.Sink[[]byte]   = (*Sink)(nil)
	_ vertex.RetryDefaulter = (*Sink)(nil)
	_ io.Closer             = (*Sink)(nil)
)

// Validate reports a bad URL or option as an *vertex.OptionError.
func (s *Sink) Validate() error { return s.cfg.validate() }

// Write POSTs msgs as one body and answers by the response: 2xx delivers
// every message; a connection error, 5xx, 408 or 429 retries every one; any
// other status sends every one to the fallback. A value the format cannot
// carry goes to the fallback without being sent. The returned error gives
// each message that is not delivered its cause.
func (s *Sink) Write(ctx context.Context, msgs []vertex.Message[[]byte]) ([]vertex.Result, error) {
	values := make([][]byte, len(msgs))
	for i := range msgs {
		values[i] = msgs[i].Value
	}
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	causes := make([]error, len(msgs))
	body, causes := encodeBody(s.cfg.format, (*bp)[:0], values, causes)
	*bp = body
	res := make([]vertex.Result, len(msgs))
	sent := 0
	for i, c := range causes {
		if c != nil {
			res[i] = vertex.ResultFallback
		} else {
			sent++
		}
	}
	if sent == 0 {
		return res, writeError(causes)
	}
	verdict, cause := s.post(ctx, body, msgs, causes)
	for i := range res {
		if causes[i] == nil {
			res[i] = verdict
			causes[i] = cause
		}
	}
	return res, writeError(causes)
}

// post sends body and returns the verdict for its messages, with the cause
// when it is not ResultOK.
func (s *Sink) post(ctx context.Context, body []byte, msgs []vertex.Message[[]byte], refused []error) (vertex.Result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.url, bytes.NewReader(body))
	if err != nil {
		return vertex.ResultRetry, fmt.Errorf("http: POST %s: %w", s.cfg.url, err)
	}
	for k, vs := range s.cfg.header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", contentTypeOf(s.cfg.format))
	req.Header.Set(IdempotencyKeyHeader, batchKey(msgs, refused))
	resp, err := s.cfg.client.Do(req)
	if err != nil {
		return vertex.ResultRetry, err // a *url.Error: "Post \"{url}\": {cause}"
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyBytes))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // so the connection is reused
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return vertex.ResultOK, nil
	case code >= 500, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout:
		return vertex.ResultRetry, &StatusError{URL: s.cfg.url, Status: code, Body: string(bytes.TrimSpace(head))}
	default:
		return vertex.ResultFallback, &StatusError{URL: s.cfg.url, Status: code, Body: string(bytes.TrimSpace(head))}
	}
}

// batchKey is the Idempotency-Key of a POST: a digest of the IDs of the
// messages it carries, in order, so that the same batch sent again has
// the same key (a runnel HTTP source then gives its records the same IDs).
func batchKey(msgs []vertex.Message[[]byte], refused []error) string {
	h := sha256.New()
	for i := range msgs {
		if refused[i] == nil {
			io.WriteString(h, msgs[i].ID)
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// writeError is the error Write returns beside its results: the cause of
// each message not delivered (the log's and, when its retries run out or
// no fallback takes it, the pipeline's error), nil when every one is.
func writeError(causes []error) error {
	for _, c := range causes {
		if c != nil {
			return &vertex.WriteError{Causes: causes}
		}
	}
	return nil
}

// DefaultRetry is vertex.RemoteRetry (see vertex.RetryDefaulter): a server
// that is down is retried until the pipeline stops, unless the vertex sets
// its own vertex.Retry.
func (s *Sink) DefaultRetry() vertex.RetryPolicy { return vertex.RemoteRetry }

// Close closes the idle connections of the sink's own client; the
// pipeline calls it once it has stopped.
func (s *Sink) Close() error {
	s.own.CloseIdleConnections()
	return nil
}
