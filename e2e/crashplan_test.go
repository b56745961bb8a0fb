package e2e

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// A crash round ends by a signal the child sends itself once one of its
// progress counts (ids its sink wrote, ids its reduces added, results they
// emitted) reaches a target the parent drew at random below what the
// child is sure to reach in the round. The
// kill therefore always lands mid-run, on a fast machine as on a slow one:
// a signal sent from the parent after some wall time lands after the end of
// a round that a fast machine finished first, and before the start of one
// that a loaded machine is slow to begin. Every other goroutine of the
// child is wherever the run has taken it when the signal comes.

// The environment of a crash child: the progress count it watches, the
// count at which it signals itself, and the signal (KILL or TERM).
const (
	crashOnEnv     = "RUNNEL_E2E_SIGNAL_ON"
	crashAtEnv     = "RUNNEL_E2E_SIGNAL_AT"
	crashSignalEnv = "RUNNEL_E2E_SIGNAL"
)

// crashProgress names a progress count of a child and what the child is
// sure to reach of it in every round from fromRound on.
type crashProgress struct {
	name      string
	work      int64
	fromRound int
}

// crashPlan is a child's side: it counts one kind of progress and, when
// the count reaches the target, prints "K <name> <count>" and signals its
// own process.
type crashPlan struct {
	on   string // the progress counted
	at   int64  // the target; 0 never signals (the final run)
	sig  syscall.Signal
	done atomic.Int64
	sent atomic.Bool

	// Since when (unix ns) the source has idled with the count at idleAt
	// (see idle).
	idleSince, idleAt atomic.Int64
}

// crashStall is how long a child whose source has nothing more to give
// this round waits for its count to move before it signals itself anyway.
const crashStall = 5 * time.Second

// idle is called by a source that has nothing more to give this round
// (the round generator idling until its signal). A target on results can
// be out of the round's reach: the previous run may have closed the
// windows this round's data would close (its watermark passed them while
// its source idled), and then nothing closes until the next round's data.
// Such a child waited for the parent's 2-minute bound and failed the test
// (TestCrashDurableMapReduceGenerator in CI: "round 8: the child did not
// reach progress 15", its stacks showing every vertex waiting for data).
// When the count has not moved for crashStall since the source went idle,
// the child signals itself at that count, still mid-run.
func (p *crashPlan) idle() {
	if p.at <= 0 || p.sent.Load() {
		return
	}
	now, done := time.Now().UnixNano(), p.done.Load()
	since := p.idleSince.Load()
	if since == 0 || p.idleAt.Load() != done {
		p.idleSince.Store(now)
		p.idleAt.Store(done)
		return
	}
	if time.Duration(now-since) < crashStall || !p.sent.CompareAndSwap(false, true) {
		return
	}
	fmt.Fprintf(os.Stdout, "K %s %d idle\n", p.on, done)
	syscall.Kill(os.Getpid(), p.sig)
}

// crashPlanFromEnv reads the plan the parent set for this child.
func crashPlanFromEnv() *crashPlan {
	p := &crashPlan{on: os.Getenv(crashOnEnv), sig: syscall.SIGKILL}
	p.at, _ = strconv.ParseInt(os.Getenv(crashAtEnv), 10, 64)
	if os.Getenv(crashSignalEnv) == "TERM" {
		p.sig = syscall.SIGTERM
	}
	return p
}

// progress adds n to the count named name, and signals the process when
// the watched count reaches the target for the first time. A SIGKILL ends
// the process here; a SIGTERM is handled by the child's signal context (a
// clean drain).
func (p *crashPlan) progress(name string, n int) {
	if p.at <= 0 || name != p.on || p.done.Add(int64(n)) < p.at || !p.sent.CompareAndSwap(false, true) {
		return
	}
	fmt.Fprintf(os.Stdout, "K %s %d\n", p.on, p.done.Load())
	syscall.Kill(os.Getpid(), p.sig)
}
