package bolt

import (
	"time"

	"go.etcd.io/bbolt"
)

// Resident pages.
//
// bbolt reads the file through a shared, read-only memory map, and every
// page a transaction reads stays mapped into the process. Commits write
// copies of the pages they change to new places in the file, so under load
// reads soon touch every page: the process's RSS grows to the size of the
// journal file, whatever the load, and looks like a leak to anything that
// watches it. Those are clean pages of the kernel's page cache. So while
// the journal is open for writing, a goroutine drops the mapping's pages
// from the process every dropInterval in which something was committed; the
// kernel keeps them cached, and the next read of one maps it again (a minor
// fault, without disk I/O).
//
// A drop is not free: MADV_DONTNEED walks the whole mapping, and every page
// read after it faults again, the hot top of every B-tree included. So the
// process keeps up to a budget of file pages mapped beyond what it held
// after the last drop, and drops only past that: a journal smaller than
// the budget is never dropped.
//
// The budget is what a large journal's speed depends on. A new intent's
// key lands on a random leaf of the key index, and the kernel maps the
// pages around a faulting one with it (fault-around, 64 KiB): about
// 50 KiB of RSS per random leaf read, 30 µs of CPU per fault on a
// virtual machine. A 16 MiB budget held about 320 such reads, so on a
// journal of 1,000,000 steps (2.4 GiB) nearly every guarded call faulted
// and the file was dropped several times a second: ×0.51–0.72 of an
// empty journal's throughput. 256 MiB measured ×0.70–1.00, never
// dropping ×0.82–0.90 (bench/results/diary.md).

// DefaultResidentBudget is Options.ResidentBudget's default.
const DefaultResidentBudget = 256 << 20

// dropInterval is the time between two checks.
const dropInterval = 100 * time.Millisecond

// dropResidentLoop drops the mapped pages when, at a check after a
// commit, the resident file pages have grown past the budget, until stop
// is closed.
func (b *Journal) dropResidentLoop(stop <-chan struct{}) {
	t := time.NewTicker(dropInterval)
	defer t.Stop()
	var seen uint64
	floor := fileResident()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		n := b.commits.Load()
		if n == seen {
			continue
		}
		seen = n
		if overBudget(fileResident(), floor, b.residentBudget) {
			b.dropResident()
			floor = fileResident()
		}
	}
}

// overBudget reports whether resident file pages (bytes; negative when
// unknown) have grown more than budget above floor. Unknown means drop, as
// every check did before the budget.
func overBudget(resident, floor, budget int64) bool {
	return resident < 0 || floor < 0 || resident-floor > budget
}

// dropResident drops the pages of the file's mapping from the process.
// Inside a read transaction bbolt cannot remap the file, so the range is
// the live mapping, not memory reused after a remap.
func (b *Journal) dropResident() {
	_ = b.db.View(func(tx *bbolt.Tx) error {
		return dropMapped(b.db.Info().Data, uintptr(tx.Size()))
	})
}
