package isbtest_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite itself runs in package isb's tests; these test the reference
// backend's own storage and contract checks.

func TestSliceBackendStores(t *testing.T) {
	ctx := context.Background()
	b := isbtest.NewSliceBackend[string]()
	if _, err := b.Open("t", 2); err != nil {
		t.Fatal(err)
	}
	l := b.Partition(1)
	if last, err := appendWait(l.Append([]string{"a", "b", "c"})); err != nil || last != 2 {
		t.Fatalf("Append = last %d, %v; want 2", last, err)
	}
	if last, _ := appendWait(l.Append([]string{"d"})); last != 3 || l.Tail() != 4 || l.Head() != 0 {
		t.Fatalf("second Append ends at %d, tail %d, head %d; want 3, 4, 0", last, l.Tail(), l.Head())
	}
	if last, err := appendWait(l.AppendOne("e")); err != nil || last != 4 || l.Tail() != 5 {
		t.Fatalf("AppendOne = %d, %v, tail %d; want 4, nil, 5", last, err, l.Tail())
	}
	buf := make([]string, 2)
	if _, got, err := l.Read(ctx, 1, 2, buf); err != nil || !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("Read(1, 2) = %v, %v", got, err)
	}
	if off, ok, err := l.Committed("g"); ok || off != 0 || err != nil {
		t.Fatalf("Committed of an unknown group = %d, %v, %v; want the head and false", off, ok, err)
	}
	if err := l.Commit(ctx, "g", 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(2); err != nil {
		t.Fatal(err)
	}
	if _, got, err := l.Read(ctx, 2, 2, buf); err != nil || !slices.Equal(got, []string{"c", "d"}) || l.Head() != 2 {
		t.Fatalf("Read(2, 2) after Release(2) = %v, %v, head %d", got, err, l.Head())
	}
	if gs, err := b.Groups(); err != nil || !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("Groups = %v, %v", gs, err)
	}
	// Data and commits survive Close and a reopen.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open("t", 2); err != nil {
		t.Fatal(err)
	}
	if off, ok, err := b.Partition(1).Committed("g"); !ok || off != 2 || err != nil || b.Partition(1).Tail() != 5 || b.Opens() != 2 {
		t.Fatalf("after reopening: commit %d, %v, %v, tail %d, opens %d", off, ok, err, b.Partition(1).Tail(), b.Opens())
	}
}

func TestSliceBackendChecksContract(t *testing.T) {
	ctx := context.Background()
	b := isbtest.NewSliceBackend[int]()
	if _, err := b.Open("t", 1); err != nil {
		t.Fatal(err)
	}
	l := b.Partition(0)
	if _, err := appendWait(l.Append([]int{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	buf := make([]int, 4)
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"Open while open", openErr(b.Open("t", 1)), isbtest.ErrBackendState},
		{"Read at the tail", readErr(l.Read(ctx, 3, 1, buf)), isbtest.ErrOutOfRange},
		{"Commit past the tail", l.Commit(ctx, "g", 4), isbtest.ErrOutOfRange},
		{"Commit", l.Commit(ctx, "g", 2), nil},
		{"Commit backwards", l.Commit(ctx, "g", 1), isbtest.ErrBackwards},
		{"Release above a commit", l.Release(3), isbtest.ErrOutOfRange},
		{"Release", l.Release(2), nil},
		{"Release backwards", l.Release(1), isbtest.ErrBackwards},
		{"Read below the head", readErr(l.Read(ctx, 1, 1, buf)), isbtest.ErrOutOfRange},
		{"Close", b.Close(), nil},
		{"Close twice", b.Close(), isbtest.ErrBackendState},
		{"Append after Close", appendErr(l.Append([]int{4})), isbtest.ErrBackendState},
		{"Read after Close", readErr(l.Read(ctx, 2, 1, buf)), isbtest.ErrBackendState},
		{"Commit after Close", l.Commit(ctx, "g", 3), isbtest.ErrBackendState},
		{"reopen as another topic", openErr(b.Open("u", 1)), isbtest.ErrBackendState},
		{"reopen with other partitions", openErr(b.Open("t", 2)), isbtest.ErrBackendState},
	} {
		if !errors.Is(c.err, c.want) || (c.want != nil) != (c.err != nil) {
			t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
}

func readErr(_ int64, _ []int, err error) error { return err }
func appendErr(_ isb.Write, err error) error    { return err }
func openErr(_ isb.Caps, err error) error       { return err }

// appendWait waits the Write of an Append and returns its last offset.
func appendWait(w isb.Write, err error) (last int64, _ error) {
	if err != nil {
		return -1, err
	}
	return w.Wait(context.Background())
}
