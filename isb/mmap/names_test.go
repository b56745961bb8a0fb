package mmap

import (
	"strings"
	"testing"
)

func TestEscapeGroup(t *testing.T) {
	cases := map[string]string{
		"orders":      "orders",
		"a.b":         "a.b",
		"":            "%",
		".":           "%2E",
		"..":          "%2E.",
		".hidden":     "%2Ehidden",
		"a/b":         "a%2Fb",
		"50%":         "50%25",
		"x y":         "x%20y",
		"é":           "%C3%A9",
		"Up_down-1.2": "Up_down-1.2",
	}
	for g, want := range cases {
		got := escapeGroup(g)
		if got != want {
			t.Errorf("escapeGroup(%q) = %q, want %q", g, got, want)
		}
		if back, ok := unescapeGroup(got); !ok || back != g {
			t.Errorf("unescapeGroup(%q) = %q, %v", got, back, ok)
		}
	}
	for _, bad := range []string{"%2", "%zz", "a%2fb", "%41", "a b", "."} {
		if g, ok := unescapeGroup(bad); ok {
			t.Errorf("unescapeGroup(%q) accepted as %q", bad, g)
		}
	}
}

func FuzzEscapeGroup(f *testing.F) {
	for _, s := range []string{"", ".", "..", "a/b", "%", "\x00", "ünï"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		e := escapeGroup(g)
		if e == "" || e == "." || e == ".." || strings.ContainsAny(e, "/\x00") {
			t.Fatalf("escapeGroup(%q) = %q is not a path component", g, e)
		}
		if back, ok := unescapeGroup(e); !ok || back != g {
			t.Fatalf("round trip of %q: %q, %v", g, back, ok)
		}
	})
}

func TestFileNames(t *testing.T) {
	if got := segmentFileName(4711); got != "00000000000000004711.seg" {
		t.Fatal(got)
	}
	if f, ok := parseSegmentFileName("00000000000000004711.seg"); !ok || f != 4711 {
		t.Fatal(f, ok)
	}
	for _, bad := range []string{"4711.seg", "0000000000000000471x.seg", "00000000000000004711.seg.tmp"} {
		if _, ok := parseSegmentFileName(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if id, ok := parsePartitionDir("partition-00012"); !ok || id != 12 {
		t.Fatal(id, ok)
	}
	for _, bad := range []string{"partition-12", "partition-00012.tmp", "partition-x0012"} {
		if _, ok := parsePartitionDir(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
