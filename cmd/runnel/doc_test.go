package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDocDrawsEveryField: every JSON field of the report, at any depth, is
// named in the command's doc, which is where its schema is documented.
func TestDocDrawsEveryField(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || rt == reflect.TypeFor[time.Time]() || seen[rt] {
			return
		}
		seen[rt] = true
		if rt != reflect.TypeFor[Report]() && rt != reflect.TypeFor[Totals]() && !strings.Contains(doc, rt.Name()+" {") {
			t.Errorf("the doc does not draw %s", rt.Name())
		}
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(doc, `"`+name+`"`) {
				t.Errorf("the doc does not name field %q of %s", name, rt.Name())
			}
			walk(rt.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[Report]())
	if len(seen) < 10 {
		t.Fatalf("walked %d types", len(seen))
	}
}

// TestBinary builds the command and runs it once, as an operator would,
// on a topic with a damaged record: exit code 1 and the damage printed.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "runnel")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := writeTopic(t, t.TempDir())
	flipByte(t, filepath.Join(dir, "partition-00000", segName(0)), recordAt(7)+18)
	cmd := exec.Command(bin, "verify", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || stderr.Len() != 0 {
		t.Fatalf("verify: %v, stderr %q\n%s", err, stderr.String(), out)
	}
	if !strings.Contains(string(out), "damage (1):\n  partition-00000/"+segName(0)+" at byte 256: offset 7: crc32c ") {
		t.Fatalf("printed\n%s", out)
	}
}
