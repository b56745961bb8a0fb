package file_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/vertex"
	"github.com/runnel-dev/runnel/vertex/file"
)

// memState is a vertex.StateStore in memory.
type memState struct {
	state []byte
	ok    bool
}

func (m *memState) Load() ([]byte, bool, error) { return m.state, m.ok, nil }
func (m *memState) Save(b []byte) error {
	m.state, m.ok = append([]byte(nil), b...), true
	return nil
}

// resumed makes a validated source resumed from store.
func resumed(t *testing.T, store vertex.StateStore, pattern string, opts ...file.SourceOption) *file.Source {
	t.Helper()
	src := newSource(t, pattern, opts...)
	if err := src.Resume(store); err != nil {
		t.Fatal(err)
	}
	return src
}

// readBatch reads one batch of up to n.
func readBatch(t *testing.T, src *file.Source, n int) []vertex.Message[[]byte] {
	t.Helper()
	msgs, err := src.Read(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// values lists the values of the batches.
func values(batches [][]string) []string {
	var out []string
	for _, b := range batches {
		for _, l := range b {
			_, v, _ := strings.Cut(l, "=")
			out = append(out, v)
		}
	}
	return out
}

// TestSourceResumesAfterAcks: a source acknowledges batches out of order
// and closes; resumed from its position, it reads every line not
// acknowledged and none that was, and reports which were (Acknowledged).
func TestSourceResumesAfterAcks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.log"), "a0\na1\na2\na3\na4\na5\n")
	write(t, filepath.Join(dir, "b.log"), "b0\nb1\n")
	pattern := filepath.Join(dir, "*.log")
	store := &memState{}
	src := resumed(t, store, pattern)
	var batches [][]vertex.Message[[]byte]
	for range 4 {
		batches = append(batches, readBatch(t, src, 2)) // a0 a1 | a2 a3 | a4 a5 | b0 b1
	}
	ctx := context.Background()
	for _, i := range []int{0, 2} {
		if err := src.Ack(ctx, batches[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Ack(ctx, batches[3][1:]); err != nil { // b1 alone
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Version int
		Files   []struct {
			Path  string
			Acked int64
			Above [][2]int64
		}
	}
	if err := json.Unmarshal(store.state, &st); err != nil {
		t.Fatalf("stored position %q: %v", store.state, err)
	}
	if got := fmt.Sprint(st); got != fmt.Sprintf("{1 [{%s 6 [[12 18]]} {%s 0 [[3 6]]}]}", filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")) {
		t.Fatalf("stored position %s (%s)", got, store.state)
	}

	again := resumed(t, store, pattern)
	for _, m := range batches[0] {
		if !again.Acknowledged(m.ID) {
			t.Errorf("%s is acknowledged, Acknowledged says no", m.ID)
		}
	}
	for _, m := range append(batches[1], batches[3][0]) {
		if again.Acknowledged(m.ID) {
			t.Errorf("%s is not acknowledged, Acknowledged says it is", m.ID)
		}
	}
	if got := fmt.Sprint(values(readAll(t, again, 10))); got != "[a2 a3 b0]" {
		t.Fatalf("resumed source read %s, want [a2 a3 b0]", got)
	}
}

// TestSourceSkipsWhatThePipelineFound: what the pipeline acknowledges
// after Resume and before the first Read (lines an earlier run wrote to
// its buffers after its last save) is not read again.
func TestSourceSkipsWhatThePipelineFound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	write(t, path, "a0\na1\na2\na3\n")
	store := &memState{}
	first := resumed(t, store, path)
	msgs := readBatch(t, first, 10)
	first.Close() // nothing acknowledged: an empty position

	src := resumed(t, store, path)
	// The pipeline found a0 and a2 in its buffers, as decoded from them.
	found := []vertex.Message[[]byte]{{ID: msgs[0].ID, Value: []byte("a0")}, {ID: msgs[2].ID, Value: []byte("a2")}}
	for _, m := range found {
		if err := src.Ack(context.Background(), []vertex.Message[[]byte]{m}); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(values(readAll(t, src, 10))); got != "[a1 a3]" {
		t.Fatalf("read %s, want [a1 a3]", got)
	}
}

// TestSourceAckRefusesForeignIDs: an ID the source cannot have made is
// vertex.ErrUnknownAck.
func TestSourceAckRefusesForeignIDs(t *testing.T) {
	dir := t.TempDir()
	src := resumed(t, &memState{}, filepath.Join(dir, "*"))
	for _, id := range []string{"7", "a.log:x-3", "a.log:5-5", "a.log:3"} {
		if err := src.Ack(context.Background(), []vertex.Message[[]byte]{{ID: id}}); !errors.Is(err, vertex.ErrUnknownAck) {
			t.Errorf("Ack of %q: %v, want ErrUnknownAck", id, err)
		}
	}
}

// savedAfter reads path whole with a resumed source, acknowledging it,
// and returns the store holding the position.
func savedAfter(t *testing.T, path string) *memState {
	t.Helper()
	store := &memState{}
	src := resumed(t, store, path)
	for _, b := range readAllMsgs(t, src) {
		if err := src.Ack(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	return store
}

// readAllMsgs reads src to its end and returns the batches.
func readAllMsgs(t *testing.T, src *file.Source) [][]vertex.Message[[]byte] {
	t.Helper()
	var out [][]vertex.Message[[]byte]
	for {
		msgs, err := src.Read(context.Background(), 100)
		if len(msgs) > 0 {
			out = append(out, msgs)
		}
		if err != nil {
			return out
		}
	}
}

// TestSourceRefusesChangedFiles: a file found shorter than its saved
// position, or replaced by another file, fails the read with an *Error
// naming the file and the offset; a file grown since is read on.
func TestSourceRefusesChangedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	check := func(t *testing.T, store *memState, sentinel error, offset int64) {
		t.Helper()
		_, err := resumed(t, store, path).Read(context.Background(), 10)
		var fe *file.Error
		if !errors.Is(err, sentinel) || !errors.As(err, &fe) || fe.Path != path || fe.Offset != offset {
			t.Fatalf("read: %v, want %v at %s offset %d", err, sentinel, path, offset)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("offset %d", offset)) {
			t.Fatalf("error %q does not name the file and the offset", msg)
		}
	}
	t.Run("truncated", func(t *testing.T) {
		write(t, path, "a0\na1\n")
		store := savedAfter(t, path)
		if err := os.Truncate(path, 4); err != nil {
			t.Fatal(err)
		}
		check(t, store, file.ErrTruncated, 6)
	})
	t.Run("replaced", func(t *testing.T) {
		write(t, path, "a0\na1\n")
		store := savedAfter(t, path)
		// Another file (another inode) renamed over it, longer.
		write(t, path+".new", "b0\nb1\nb2\n")
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
		check(t, store, file.ErrReplaced, 6)
	})
	t.Run("grown", func(t *testing.T) {
		write(t, path, "a0\na1\n")
		store := savedAfter(t, path)
		appendTo(t, path, "a2\n")
		if got := fmt.Sprint(values(readAll(t, resumed(t, store, path), 10))); got != "[a2]" {
			t.Fatalf("read %s, want [a2]", got)
		}
	})
	t.Run("deleted", func(t *testing.T) {
		// Deleted while stopped: forgotten at the restart, so a file
		// created there later is read from its start.
		write(t, path, "a0\na1\n")
		store := savedAfter(t, path)
		os.Remove(path)
		src := resumed(t, store, path, file.Follow(time.Millisecond))
		write(t, path, "c0\n")
		if msgs := readBatch(t, src, 10); len(msgs) != 1 || msgs[0].ID != path+":0-3" || string(msgs[0].Value) != "c0" {
			t.Fatalf("read %d messages, want %s:0-3 = c0", len(msgs), path)
		}
	})
}

// TestSourceFollowRefusesTruncation: under Follow a file truncated below
// where the source read fails the next read, naming file and offset.
func TestSourceFollowRefusesTruncation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	write(t, path, "a0\na1\n")
	src := newSource(t, path, file.Follow(time.Millisecond))
	readBatch(t, src, 10)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := src.Read(ctx, 10)
	var fe *file.Error
	if !errors.Is(err, file.ErrTruncated) || !errors.As(err, &fe) || fe.Path != path || fe.Offset != 6 {
		t.Fatalf("read after truncation: %v, want ErrTruncated at %s offset 6", err, path)
	}
}
