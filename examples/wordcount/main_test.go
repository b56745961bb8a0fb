package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The expected report was checked against an independent count of the
// texts: 67 words, 28 of them stopwords, 39 others in 31 distinct stems.
// Every count is exact because nothing fails, so every message is read,
// written and acked exactly once.
const wantReport = `most frequent words:
  river      4
  stream     4
  data       2
  sink       2
  blow       1
  cold       1
  day        1
  drop       1
distinct words: 31, stopwords skipped: 28
  vertex poem       read   4  written   4  acked   4
  vertex prose      read   3  written   3  acked   3
  vertex split      read   7  written  67  acked   7
  vertex normalize  read  39  written  39  acked  39
  vertex counts     read  39  written  39  acked  39
  vertex stopwords  read  28  written  28  acked  28
`

func TestRunReportsExactCounts(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if got := out.String(); got != wantReport {
		t.Errorf("report:\n%s\nwant:\n%s", got, wantReport)
	}
}
