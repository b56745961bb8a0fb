package natsmsg

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/vertex"
)

var errTestSubject = errors.New("test: invalid subject")

func TestOutgoingMsg(t *testing.T) {
	m := &vertex.Message[[]byte]{ID: "id-1", Keys: []string{"k"}, Value: []byte("v")}
	o := Outgoing{Subject: "orders", MsgID: true, ErrSubject: errTestSubject}
	msg, err := o.Msg(m)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "orders" || string(msg.Data) != "v" || msg.Header.Get(MsgIDHeader) != "id-1" || msg.Header.Get(KeyHeader) != "k" {
		t.Errorf("Msg = subject %q data %q headers %v", msg.Subject, msg.Data, msg.Header)
	}
	o.MsgID = false
	if msg, _ := o.Msg(m); msg.Header.Get(MsgIDHeader) != "" {
		t.Errorf("MsgID false: header %q set", MsgIDHeader)
	}
	o.SubjectOf = func(*vertex.Message[[]byte]) string { return "a b" }
	if _, err := o.Msg(m); !errors.Is(err, errTestSubject) {
		t.Errorf("a subject with a space: %v, want the sink's ErrSubject", err)
	}
	o.SubjectOf = nil
	bad := &vertex.Message[[]byte]{ID: "x", Keys: []string{"a\r\nb"}}
	if _, err := o.Msg(bad); !errors.Is(err, ErrHeader) {
		t.Errorf("a key with CR LF: %v, want ErrHeader", err)
	}
}

func TestResults(t *testing.T) {
	var failed atomic.Int64
	r := NewResults(3)
	if res, err := r.Done(&failed); res != nil || err != nil || failed.Load() != 0 {
		t.Fatalf("nothing failed: Done = %v, %v, failed %d; want nil, nil, 0", res, err, failed.Load())
	}
	cause := errors.New("boom")
	r.Fail(0, vertex.ResultFallback, cause)
	r.Fail(2, vertex.ResultRetry, cause)
	if !r.Failed(0) || r.Failed(1) || !r.Failed(2) {
		t.Errorf("Failed = %v %v %v, want true false true", r.Failed(0), r.Failed(1), r.Failed(2))
	}
	res, err := r.Done(&failed)
	want := []vertex.Result{vertex.ResultFallback, vertex.ResultOK, vertex.ResultRetry}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("result %d = %v, want %v", i, res[i], want[i])
		}
	}
	var we *vertex.WriteError
	if !errors.As(err, &we) || len(we.Causes) != 3 || we.Causes[1] != nil || !errors.Is(we.Causes[2], cause) {
		t.Errorf("Done error = %v, want a *vertex.WriteError with causes at 0 and 2", err)
	}
	if failed.Load() != 1 {
		t.Errorf("failed = %d, want 1 (the ResultRetry only)", failed.Load())
	}
}
