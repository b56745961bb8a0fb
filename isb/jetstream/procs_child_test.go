package jetstream_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/internal/crashtest"
	"github.com/runnel-dev/runnel/internal/natstest"
	"github.com/runnel-dev/runnel/isb"
	"github.com/runnel-dev/runnel/isb/isbtest"
	"github.com/runnel-dev/runnel/isb/jetstream"
)

// The child side of the two-process tests (procs_test.go): each child is
// one OS process with its own connection, backend and topic on the
// parent's server. It produces the ids it is given, joins group procGroup
// as one member, and reads its partitions until each holds procPerPart
// items read, committing as it goes. It reports on stdout, one line a
// write (crashtest.Printf):
//
//	J tries p...        joined after tries attempts, owning partitions p...
//	S p off             it starts partition p at off (the group's commit)
//	P n                 its n items are produced (every produce returned)
//	B p off id...       a batch of partition p from offset off, the items' ids
//	c p end             about to commit partition p up to end
//	C p end             the commit returned
//	H                   (victim) past half its share read: the parent kills it now
//	D                   everything read and committed, the topic closed

// children are the roles a re-executed test binary runs (see TestMain).
var children = map[string]func(){
	"procs-member": func() { procChild(procMember) },
	"procs-victim": func() { procChild(procVictim) },
	"procs-heir":   func() { procChild(procHeir) },
}

const (
	procTopic      = "orders"
	procGroup      = "g"
	procPartitions = 4
	procPerProcess = 1000 // ids each producing process makes
	// procPerPart is what each partition holds once both processes have
	// produced: ids are routed by id mod procPartitions.
	procPerPart  = 2 * procPerProcess / procPartitions
	procBatch    = 16
	procClaimTTL = time.Second
	// procChildTimeout bounds everything a child waits for, so a child
	// that cannot finish fails by itself rather than hang the parent.
	procChildTimeout = time.Minute
)

// The environment the parent gives a child.
const (
	envURL     = "RUNNEL_PROCS_URL"
	envPrefix  = "RUNNEL_PROCS_PREFIX"
	envMember  = "RUNNEL_PROCS_MEMBER"  // member index of procMembers
	envProduce = "RUNNEL_PROCS_PRODUCE" // "from to": ids to produce, none when empty
	envEvery   = "RUNNEL_PROCS_EVERY"   // commit every n-th batch
)

const procMembers = 2

type procRole int

const (
	procMember procRole = iota // produces, reads its share, ends
	// procVictim says H at a random step past procHalt items read (see
	// killPoint) and goes on reading slowly; it stops at procParkAt
	// items and waits to be killed, should the kill come that late.
	procVictim
	// procHeir takes over a member slot whose claim a killed process
	// still holds: it retries JoinGroup until the claim expires.
	procHeir
)

const (
	procHalt   = procPerProcess / 2
	procParkAt = procPerProcess * 4 / 5
	procPace   = 10 * time.Millisecond
)

// procOptions are the backend options of every process of the tests: the
// package's test options with a short claim TTL, so that a killed
// member's partitions are free again about a second after its death.
func procOptions(prefix string) []jetstream.Option {
	return append(testOptions(prefix), jetstream.ClaimTTL(procClaimTTL),
		jetstream.Topic(isb.Partitions(procPartitions)))
}

// procRoute sends id k to partition k mod n, so every process knows how
// many items each partition ends with.
func procRoute() isb.Router[isbtest.Item] {
	return isb.BySelector(func(it isbtest.Item, n int) int { return it.Seq % n })
}

func procChild(role procRole) {
	member, every := envInt(envMember), envInt(envEvery)
	ctx, cancel := context.WithTimeout(context.Background(), procChildTimeout)
	defer cancel()
	nc, err := nats.Connect(os.Getenv(envURL), natstest.ConnectOptions()...)
	if err != nil {
		crashtest.Fail("connect: %v", err)
	}
	defer nc.Close()
	tp, err := jetstream.NewTopic[isbtest.Item](nc, procTopic, procOptions(os.Getenv(envPrefix))...)
	if err != nil {
		crashtest.Fail("open topic: %v", err)
	}
	c, tries := procJoin(ctx, tp, member, role == procHeir)
	crashtest.Printf("J %d %s", tries, strings.Trim(fmt.Sprint(c.Assigned()), "[]"))
	var wg sync.WaitGroup
	if from, to, ok := produceRange(); ok {
		if role == procVictim {
			// All of it before reading: the kill must lose no produce
			// (the parent checks that every id is read), and reading
			// outruns producing.
			procProduce(ctx, tp, member, from, to)
		} else {
			wg.Go(func() { procProduce(ctx, tp, member, from, to) })
		}
	}
	procRead(ctx, c, role, every)
	wg.Wait()
	if err := c.Close(); err != nil {
		crashtest.Fail("close consumer: %v", err)
	}
	if err := tp.Close(); err != nil {
		crashtest.Fail("close topic: %v", err)
	}
	crashtest.Printf("D")
}

// procJoin joins the group as member; an heir retries while another
// process's claim holds the slot.
func procJoin(ctx context.Context, tp *isb.Topic[isbtest.Item], member int, retry bool) (*isb.PullConsumer[isbtest.Item], int) {
	for tries := 1; ; tries++ {
		c, err := tp.JoinGroup(procGroup, member, procMembers, isb.ManualCommit(), isb.BatchSize(procBatch))
		if err == nil {
			return c, tries
		}
		if !retry || !errors.Is(err, isb.ErrGroupInUse) {
			crashtest.Fail("join as member %d: %v", member, err)
		}
		select {
		case <-ctx.Done():
			crashtest.Fail("member %d's claim did not expire in %v (%d tries): %v", member, procChildTimeout, tries, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// procProduce produces ids from..to-1 as items of producer member, in
// batches of 1 to 7.
func procProduce(ctx context.Context, tp *isb.Topic[isbtest.Item], member, from, to int) {
	pr := tp.Producer(procRoute())
	for id := from; id < to; {
		n := min(1+id%7, to-id)
		if err := pr.ProduceBatch(ctx, seqs(member, id, n)); err != nil {
			crashtest.Fail("produce ids %d..%d: %v", id, id+n-1, err)
		}
		id += n
	}
	crashtest.Printf("P %d", to-from)
}

// procRead reads until every assigned partition is read to procPerPart,
// committing every every-th batch and everything at the end. A victim
// parks at procParkAt items (see killPoint).
func procRead(ctx context.Context, c *isb.PullConsumer[isbtest.Item], role procRole, every int) {
	end := map[int]int64{} // per partition: the end of what was read
	committed := map[int]int64{}
	for _, p := range c.Assigned() {
		off, err := c.Committed(p)
		if err != nil {
			crashtest.Fail("committed %d: %v", p, err)
		}
		end[p], committed[p] = off, off
		crashtest.Printf("S %d %d", p, off)
	}
	kp := killPoint{victim: role == procVictim, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
	read, batches := 0, 0
	commit := func(p int) {
		crashtest.Printf("c %d %d", p, end[p])
		kp.step(read)
		if err := c.CommitTo(p, end[p]); err != nil {
			crashtest.Fail("commit partition %d to %d: %v", p, end[p], err)
		}
		crashtest.Printf("C %d %d", p, end[p])
		kp.step(read)
		committed[p] = end[p]
	}
	for !allRead(end) {
		if kp.victim && read >= procParkAt {
			<-ctx.Done()
			crashtest.Fail("the victim was not killed in %v", procChildTimeout)
		}
		b, err := c.Pull(ctx)
		if err != nil {
			crashtest.Fail("pull after %d items: %v", read, err)
		}
		var line strings.Builder
		fmt.Fprintf(&line, "B %d %d", b.Partition, b.Offset)
		for _, it := range b.Items {
			fmt.Fprintf(&line, " %d", it.Seq)
		}
		crashtest.Printf("%s", line.String())
		end[b.Partition] = b.End()
		read += len(b.Items)
		batches++
		kp.step(read)
		if batches%every == 0 {
			commit(b.Partition)
		}
	}
	for p, e := range end {
		if committed[p] < e {
			commit(p)
		}
	}
}

// killPoint chooses where a victim is killed: once it has read procHalt
// items, at a random one of the steps after a line (a batch printed and
// not committed, a commit begun and not sent, a commit returned), it says
// H, the parent's signal to kill it; from then on it sleeps procPace at
// every step, so that the kill lands while it works, mostly right there.
type killPoint struct {
	victim, halted bool
	rng            *rand.Rand
}

func (k *killPoint) step(read int) {
	if !k.victim || read < procHalt {
		return
	}
	if !k.halted && k.rng.IntN(4) == 0 {
		crashtest.Printf("H")
		k.halted = true
	}
	if k.halted {
		time.Sleep(procPace) // pacing only: nothing waits on it
	}
}

func allRead(end map[int]int64) bool {
	for _, e := range end {
		if e < procPerPart {
			return false
		}
	}
	return true
}

func envInt(name string) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil {
		crashtest.Fail("%s=%q: %v", name, os.Getenv(name), err)
	}
	return n
}

func produceRange() (from, to int, ok bool) {
	f := strings.Fields(os.Getenv(envProduce))
	if len(f) != 2 {
		return 0, 0, false
	}
	from, err1 := strconv.Atoi(f[0])
	to, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		crashtest.Fail("%s=%q", envProduce, os.Getenv(envProduce))
	}
	return from, to, true
}
