package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
)

// Reads by sequence: batched direct gets.
//
// A read asks the stream for up to n messages from a sequence with one
// request to $JS.API.DIRECT.GET.<stream> ({"seq":s,"batch":n,"no_hdr":
// true}); the server answers with the messages, without headers, and an
// end-of-batch status (204 EOB) carrying the last sequence it sent and how
// many messages follow it. Without headers nats.go parses no header map
// per message; the sequences are checked instead: k messages from s ending
// at last are contiguous exactly when last == s+k-1 (a purge or a deleted
// message in between shows as last > s+k-1). It needs AllowDirect on the
// stream. The request is stateless: any number of readers at any
// positions share one subscription, and nothing is left in the server when
// a reader goes away.

// directGetPrefix is the direct get API subject of a stream, before its name.
const directGetPrefix = "$JS.API.DIRECT.GET."

// batchEnd is the end of a batched direct get.
type batchEnd struct {
	msgs    []*nats.Msg
	last    uint64 // sequence of the last message sent, 0 if none
	pending uint64 // Nats-Num-Pending of the end (see log.fetch for what it counts)
	status  string // "204" at a normal end, "404" when nothing was found, "503" without responders
}

// directReader routes the replies of batched direct gets of one connection
// by the last token of their reply subject.
type directReader struct {
	nc     *nats.Conn
	prefix string // reply subject prefix, ending with '.'
	sub    *nats.Subscription
	status chan nats.Status // reconnects: requests in flight fail at once

	mu   sync.Mutex
	next uint64
	reqs map[string]*directReq
}

type directReq struct {
	msgs []*nats.Msg
	end  chan batchEnd // buffered 1: the handler never blocks
	fail chan error    // buffered 1: a reconnect ended the request
}

func newDirectReader(nc *nats.Conn) (*directReader, error) {
	r := &directReader{nc: nc, prefix: nc.NewInbox() + ".", reqs: make(map[string]*directReq)}
	sub, err := nc.Subscribe(r.prefix+"*", r.handle)
	if err != nil {
		return nil, fmt.Errorf("jetstream: subscribe for direct gets: %w", err)
	}
	// A read returns at most a batch, so the pending limits of the
	// subscription only need to hold the batches in flight: no limit here,
	// the readers bound them.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("jetstream: direct get subscription: %w", err)
	}
	r.sub = sub
	r.status = nc.StatusChanged(nats.RECONNECTING)
	return r, nil
}

// watchReconnects fails the requests in flight when the connection drops:
// their answers are lost with it, and a read retried once the connection
// is back costs a reconnect, not a RequestTimeout. It returns when close
// removes the status listener.
func (r *directReader) watchReconnects() {
	for range r.status {
		r.mu.Lock()
		for token, req := range r.reqs {
			delete(r.reqs, token)
			req.fail <- nats.ErrDisconnected
		}
		r.mu.Unlock()
	}
}

func (r *directReader) close() error {
	r.nc.RemoveStatusListener(r.status)
	if err := r.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return err
	}
	return nil
}

// handle runs on the subscription's goroutine, in arrival order.
func (r *directReader) handle(m *nats.Msg) {
	token := m.Subject[len(r.prefix):]
	r.mu.Lock()
	req := r.reqs[token]
	if req == nil { // a request that timed out or was cancelled
		r.mu.Unlock()
		return
	}
	status := ""
	if len(m.Data) == 0 && m.Header != nil {
		status = m.Header.Get("Status")
	}
	if status == "" {
		req.msgs = append(req.msgs, m)
		r.mu.Unlock()
		return
	}
	delete(r.reqs, token)
	r.mu.Unlock()
	end := batchEnd{msgs: req.msgs, status: status}
	end.last, _ = strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
	end.pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
	req.end <- end
}

type directGetRequest struct {
	Seq      uint64 `json:"seq"`
	Batch    int    `json:"batch"`
	MaxBytes int    `json:"max_bytes,omitempty"`
	NoHdr    bool   `json:"no_hdr"`
}

// get asks stream for up to n messages from seq (and, unless maxBytes is
// 0, about maxBytes: the server stops after the message that reaches it)
// and waits for the end of the batch or for ctx. With headers the
// messages carry them, among them Nats-Sequence (the slow path that finds
// a gap).
func (r *directReader) get(ctx context.Context, stream string, seq uint64, n int, headers bool, maxBytes int) (batchEnd, error) {
	body, err := json.Marshal(directGetRequest{Seq: seq, Batch: n, MaxBytes: maxBytes, NoHdr: !headers})
	if err != nil {
		return batchEnd{}, err
	}
	req := &directReq{end: make(chan batchEnd, 1), fail: make(chan error, 1)}
	r.mu.Lock()
	r.next++
	token := strconv.FormatUint(r.next, 36)
	r.reqs[token] = req
	r.mu.Unlock()
	forget := func() {
		r.mu.Lock()
		delete(r.reqs, token)
		r.mu.Unlock()
	}
	if err := r.nc.PublishRequest(directGetPrefix+stream, r.prefix+token, body); err != nil {
		forget()
		return batchEnd{}, err
	}
	select {
	case end := <-req.end:
		return end, nil
	case err := <-req.fail:
		return batchEnd{}, err
	case <-ctx.Done():
		forget()
		return batchEnd{}, ctx.Err()
	}
}
