//go:build linux

package main

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// commitStats are the journal commits made during a load.
type commitStats struct {
	// Commits is the number of durable group commits; Writes the journal
	// writes (Applies that changed something) they carried.
	Commits float64
	Writes  float64
	// Seconds is the time spent committing, fsyncs included.
	Seconds float64
	// P50 and P99 of a commit's duration, when known (in-process only).
	P50, P99 time.Duration
}

func (c commitStats) sub(before commitStats) commitStats {
	return commitStats{Commits: c.Commits - before.Commits, Writes: c.Writes - before.Writes, Seconds: c.Seconds - before.Seconds}
}

// Names of toolguard's metrics read from the subprocess's GET /metrics.
const (
	metricCommitCount = "toolguard_journal_commit_duration_seconds_count"
	metricCommitSum   = "toolguard_journal_commit_duration_seconds_sum"
	metricBatchSum    = "toolguard_journal_commit_batch_size_sum"
)

// scrapeCommits reads the journal commit metrics from a toolguard admin
// API; ok is false when it has none (an older binary).
func scrapeCommits(adminURL string) (commitStats, bool) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	req, err := http.NewRequest(http.MethodGet, adminURL+"/metrics", nil)
	if err != nil {
		return commitStats{}, false
	}
	req.Header.Set("Authorization", "Bearer "+benchAdminToken)
	resp, err := c.Do(req)
	if err != nil {
		return commitStats{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return commitStats{}, false
	}
	var s commitStats
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		var dst *float64
		switch name {
		case metricCommitCount:
			dst, found = &s.Commits, true
		case metricCommitSum:
			dst = &s.Seconds
		case metricBatchSum:
			dst = &s.Writes
		default:
			continue
		}
		*dst, _ = strconv.ParseFloat(strings.TrimSpace(value), 64)
	}
	return s, found
}

// commitRecorder is the in-process journal's OnCommit hook: it keeps every
// commit's duration and batch size until reset.
type commitRecorder struct {
	mu        sync.Mutex
	durations []time.Duration
	writes    int
}

func (r *commitRecorder) observe(d time.Duration, batch int) {
	r.mu.Lock()
	r.durations = append(r.durations, d)
	r.writes += batch
	r.mu.Unlock()
}

// take returns what was recorded since the last take.
func (r *commitRecorder) take() commitStats {
	r.mu.Lock()
	ds, writes := r.durations, r.writes
	r.durations, r.writes = make([]time.Duration, 0, 4096), 0
	r.mu.Unlock()
	slices.Sort(ds)
	lr := loadResult{latencies: ds}
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return commitStats{Commits: float64(len(ds)), Writes: float64(writes), Seconds: total.Seconds(),
		P50: lr.percentile(0.5), P99: lr.percentile(0.99)}
}
