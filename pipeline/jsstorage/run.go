package jsstorage

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/pipeline"
)

// The run record: key "run" of the state bucket, as JSON
//
//	{"id": "<run>", "ended": ["sink/0", ...], "all": ["sink/0", "sink/1"], "complete": false}
//
// Every process that starts running part of a pipeline joins the run the
// record names, until every sink replica of all has ended it; the next
// JoinRun then replaces it with a new run. Both changes are
// compare-and-sets on the revision read (a KV update at that revision, at 0
// for a key never written), retried on a conflict after reading again, so
// processes that join at once all get the run of the one write that went
// through. Reads go to the bucket's leader (leader.go): a replica behind
// could show a run already replaced, which no write would then correct.

// runRecord is the value of the run key.
type runRecord struct {
	ID       string   `json:"id"`
	Ended    []string `json:"ended"`
	All      []string `json:"all,omitempty"`
	Complete bool     `json:"complete"`
}

// complete reports whether every sink replica of All ended the run.
func (r *runRecord) complete() bool {
	if len(r.All) == 0 {
		return false
	}
	for _, n := range r.All {
		if !slices.Contains(r.Ended, n) {
			return false
		}
	}
	return true
}

// maxCASAttempts bounds the compare-and-sets of one JoinRun or EndRun: a
// conflict means another process wrote the record meanwhile, which it does
// at most twice per run (the join and its end), so this many only fail
// when something rewrites the record in a loop.
const maxCASAttempts = 64

// ErrRunConflict is returned when the run record kept changing under a
// JoinRun or EndRun for maxCASAttempts attempts.
var ErrRunConflict = errors.New("jsstorage: the run record kept changing")

// JoinRun returns the run of pipeline p: the recorded one while some sink
// replica of it has not ended, else a new one it records (with After the
// run it replaced).
func (s *Storage) JoinRun(p string) (pipeline.Run, error) {
	var run pipeline.Run
	err := s.casRun(p, "join", func(rec *runRecord, live bool) (bool, error) {
		if live && !rec.complete() {
			run = pipeline.Run{ID: rec.ID}
			return false, nil
		}
		run = pipeline.Run{ID: newRunID()}
		if live {
			run.After = rec.ID
		}
		*rec = runRecord{ID: run.ID, Ended: []string{}}
		return true, nil
	})
	return run, err
}

// EndRun records that processor ended run, and all the sink replicas of
// p: once each of them has, the next JoinRun starts a new run. The end of
// a run that is no longer the recorded one is not recorded: that run was
// complete already, and replacing the record needed every end of it.
func (s *Storage) EndRun(p, run, processor string, all []string) error {
	if processor == "" {
		return optErr("EndRun processor", processor, "must not be empty")
	}
	all = slices.Compact(slices.Sorted(slices.Values(all)))
	return s.casRun(p, "end run "+run+" by "+processor, func(rec *runRecord, live bool) (bool, error) {
		if !live {
			return false, fmt.Errorf("no run is recorded (EndRun of %q without a JoinRun)", run)
		}
		if rec.ID != run {
			return false, nil
		}
		changed := false
		if !slices.Contains(rec.Ended, processor) {
			rec.Ended = append(rec.Ended, processor)
			slices.Sort(rec.Ended)
			changed = true
		}
		if !slices.Equal(rec.All, all) {
			rec.All, changed = all, true
		}
		rec.Complete = rec.complete()
		return changed, nil
	})
}

// casRun reads the run record of p from the leader, lets change decide
// (live is false when there is none) and, when it asks to, writes the
// record at the revision read; on a conflict it starts again.
func (s *Storage) casRun(p, op string, change func(rec *runRecord, live bool) (write bool, err error)) error {
	bucket, err := bucketName(p, stateSuffix)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("jsstorage: %s: bucket %q key %q: %w", op, bucket, runKey, err)
	}
	for range maxCASAttempts {
		var done bool
		err := s.request(func(ctx context.Context) (err error) {
			done, err = s.casOnce(ctx, p, bucket, change)
			return err
		})
		if err != nil {
			return fail(err)
		}
		if done {
			return nil
		}
	}
	return fail(fmt.Errorf("%w: %d compare-and-sets conflicted", ErrRunConflict, maxCASAttempts))
}

// casOnce is one read and compare-and-set of casRun: done is false when
// the record was written meanwhile (read it again).
func (s *Storage) casOnce(ctx context.Context, p, bucket string, change func(rec *runRecord, live bool) (write bool, err error)) (done bool, err error) {
	kv, err := s.bucket(ctx, p)
	if err != nil {
		return false, err
	}
	e, err := s.read(ctx, bucket, runKey)
	if err != nil {
		return false, err
	}
	var rec runRecord
	if e.live {
		if err := json.Unmarshal(e.value, &rec); err != nil {
			return false, fmt.Errorf("the record %q does not decode: %w (delete the key to start a new run)", e.value, err)
		}
	}
	write, err := change(&rec, e.live)
	if err != nil || !write {
		return true, err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	_, err = kv.Update(ctx, runKey, b, e.rev)
	if errors.Is(err, natsjs.ErrKeyRevisionMismatch) || errors.Is(err, natsjs.ErrKeyExists) {
		return false, nil // written meanwhile: read again
	}
	return err == nil, err
}

// newRunID is the time in base 36 and 40 random bits: unique across
// processes that start a run in the same nanosecond.
func newRunID() string {
	var r [8]byte
	rand.Read(r[:5])
	return strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatUint(binary.LittleEndian.Uint64(r[:]), 36)
}
