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

// dropInterval is the time between two drops.
const dropInterval = 100 * time.Millisecond

// dropResidentLoop drops the mapped pages after every dropInterval that saw
// a commit, until stop is closed.
func (b *Journal) dropResidentLoop(stop <-chan struct{}) {
	t := time.NewTicker(dropInterval)
	defer t.Stop()
	var seen uint64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if n := b.commits.Load(); n != seen {
			seen = n
			b.dropResident()
		}
	}
}

// dropResident drops the pages of the file's mapping from the process.
// Inside a read transaction bbolt cannot remap the file, so the range is
// the live mapping, not memory reused after a remap.
func (b *Journal) dropResident() {
	_ = b.db.View(func(tx *bbolt.Tx) error {
		return dropMapped(b.db.Info().Data, uintptr(tx.Size()))
	})
}
