package bolt

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// mappedKiB is the resident size of the process's mappings of path, from
// /proc/self/smaps.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && fields[5] == path
		case in && len(fields) >= 2 && fields[0] == "Rss:":
			n, _ := strconv.Atoi(fields[1])
			total += n
		}
	}
	return total
}

func TestDropResidentUnmapsJournalPages(t *testing.T) {
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{})
	ctx := context.Background()
	for i := range 2000 {
		k := benchKey(int64(i))
		st, err := b.Apply(ctx, k, benchStart(k))
		if err == nil {
			_, err = b.Apply(ctx, k, benchOutcome(st.Epoch, st.Fence))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := b.ForEach(func(journal.Step) error { return nil }); err != nil { // read every record
		t.Fatal(err)
	}
	before := mappedKiB(t, path)
	if before < 256 {
		t.Fatalf("only %d KiB of the journal mapped after reading 2000 steps: the test measures nothing", before)
	}
	b.dropResident()
	if after := mappedKiB(t, path); after > before/10 {
		t.Fatalf("%d KiB of the journal still mapped after the drop (%d KiB before)", after, before)
	}
	// The journal reads and writes on as before.
	if _, err := b.Get(benchKey(7)); err != nil {
		t.Fatal(err)
	}
	k := benchKey(5000)
	if _, err := b.Apply(ctx, k, benchStart(k)); err != nil {
		t.Fatal(err)
	}
}
