package isbtest_test

import (
	"errors"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/runnel-dev/runnel/isb/isbtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The suite itself runs in package isb's tests; these test the reference
// backend's own storage and contract checks.

func TestSliceBackendStores(t *testing.T) {
	b := isbtest.NewSliceBackend[string]()
	if err := b.Open("t", 2); err != nil {
		t.Fatal(err)
	}
	l := b.Partition(1)
	if first, err := l.Append([]string{"a", "b", "c"}); err != nil || first != 0 {
		t.Fatalf("Append = %d, %v", first, err)
	}
	if first, _ := l.Append([]string{"d"}); first != 3 || l.Tail() != 4 || l.Head() != 0 {
		t.Fatalf("second Append at %d, tail %d, head %d; want 3, 4, 0", first, l.Tail(), l.Head())
	}
	buf := make([]string, 2)
	if got, err := l.Read(1, 2, buf); err != nil || !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("Read(1, 2) = %v, %v", got, err)
	}
	if off, ok := l.Committed("g"); ok || off != 0 {
		t.Fatalf("Committed of an unknown group = %d, %v; want the head and false", off, ok)
	}
	if err := l.Commit("g", 2); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(2); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Read(2, 2, buf); err != nil || !slices.Equal(got, []string{"c", "d"}) || l.Head() != 2 {
		t.Fatalf("Read(2, 2) after Release(2) = %v, %v, head %d", got, err, l.Head())
	}
	if gs := b.Groups(); !slices.Equal(gs, []string{"g"}) {
		t.Fatalf("Groups = %v", gs)
	}
	// Data and commits survive Close and a reopen.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Open("t", 2); err != nil {
		t.Fatal(err)
	}
	if off, ok := b.Partition(1).Committed("g"); !ok || off != 2 || b.Partition(1).Tail() != 4 || b.Opens() != 2 {
		t.Fatalf("after reopening: commit %d, %v, tail %d, opens %d", off, ok, b.Partition(1).Tail(), b.Opens())
	}
}

func TestSliceBackendChecksContract(t *testing.T) {
	b := isbtest.NewSliceBackend[int]()
	if err := b.Open("t", 1); err != nil {
		t.Fatal(err)
	}
	l := b.Partition(0)
	l.Append([]int{1, 2, 3})
	buf := make([]int, 4)
	for _, c := range []struct {
		what string
		err  error
		want error
	}{
		{"Open while open", b.Open("t", 1), isbtest.ErrBackendState},
		{"Read at the tail", readErr(l.Read(3, 1, buf)), isbtest.ErrOutOfRange},
		{"Commit past the tail", l.Commit("g", 4), isbtest.ErrOutOfRange},
		{"Commit", l.Commit("g", 2), nil},
		{"Commit backwards", l.Commit("g", 1), isbtest.ErrBackwards},
		{"Release above a commit", l.Release(3), isbtest.ErrOutOfRange},
		{"Release", l.Release(2), nil},
		{"Release backwards", l.Release(1), isbtest.ErrBackwards},
		{"Read below the head", readErr(l.Read(1, 1, buf)), isbtest.ErrOutOfRange},
		{"Close", b.Close(), nil},
		{"Close twice", b.Close(), isbtest.ErrBackendState},
		{"Append after Close", appendErr(l.Append([]int{4})), isbtest.ErrBackendState},
		{"Read after Close", readErr(l.Read(2, 1, buf)), isbtest.ErrBackendState},
		{"Commit after Close", l.Commit("g", 3), isbtest.ErrBackendState},
		{"reopen as another topic", b.Open("u", 1), isbtest.ErrBackendState},
		{"reopen with other partitions", b.Open("t", 2), isbtest.ErrBackendState},
	} {
		if !errors.Is(c.err, c.want) || (c.want != nil) != (c.err != nil) {
			t.Errorf("%s: %v, want %v", c.what, c.err, c.want)
		}
	}
}

func readErr(_ []int, err error) error   { return err }
func appendErr(_ int64, err error) error { return err }
