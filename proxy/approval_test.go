package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/journal/postgres"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// Approval by policy (approval.when), route budgets and the cap on open
// holds, through the real proxy, on both journal backends.

// backend opens a fresh journal of one kind for a test.
type backend struct {
	name string
	open func(t *testing.T) journal.Store
}

// backends are bbolt and, when TOOLGUARD_TEST_POSTGRES is set (else the
// subtest skips; under CI=true it fails), PostgreSQL.
var backends = []backend{
	{"bolt", func(t *testing.T) journal.Store {
		j, err := bolt.Open(filepath.Join(t.TempDir(), "toolguard.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if errs := j.Check(); len(errs) > 0 {
				t.Errorf("journal check: %v", errs)
			}
			j.Close()
		})
		return j
	}},
	{"postgres", func(t *testing.T) journal.Store { return openPostgres(t, pgtest.DSN(t), pgtest.Schema(t)) }},
}

// openPostgres opens the journal in schema, as one more replica when it
// is open already.
func openPostgres(t *testing.T, dsn, schema string) journal.Store {
	t.Helper()
	j, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if errs := j.Check(); len(errs) > 0 {
			t.Errorf("journal check: %v", errs)
		}
		j.Close()
	})
	return j
}

// postAs sends body as the caller with credential cred.
func (r *replica) postAs(t *testing.T, cred, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.baseURL+"/v1/things", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", cred)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp, string(b)}
}

// expect fails t unless the reply has the status, and the problem type
// when one is given.
func (rp reply) expect(t *testing.T, what string, status int, problem string) {
	t.Helper()
	if rp.resp == nil {
		t.Fatalf("%s: no answer", what)
	}
	if rp.resp.StatusCode != status || (problem != "" && !strings.Contains(rp.body, problem)) {
		t.Fatalf("%s: %d %s, want %d %s", what, rp.resp.StatusCode, rp.body, status, problem)
	}
}

// approve approves the held step of a reply, as an operator does.
func approve(t *testing.T, store journal.Store, rp reply) {
	t.Helper()
	if _, err := store.Apply(context.Background(), rp.resp.Header.Get(HeaderKey), admin.ApproveMutation("ok")); err != nil {
		t.Fatalf("approve: %v", err)
	}
}

const whenRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    key: {fields: [ref]}
    approval: {when: 'int(body.amount) > 10000 && body.currency == "eur"'}
`

// TestApprovalWhen: a new intent is held for approval when its route's
// approval.when is true, or cannot be evaluated (fail closed, the error in
// the step's evidence), and sent when it is false; the approval binds to
// the request and lets it through once.
func TestApprovalWhen(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store := be.open(t)
			tr := &scriptedTransport{answers: []string{`{"id":"t_1"}`}}
			r := newProxyOn(t, store, time.Now, whenRoute, tr, Options{})

			r.post(t, `{"ref":"small","amount":500,"currency":"eur"}`).expect(t, "below the threshold", http.StatusCreated, "")
			r.post(t, `{"ref":"small","amount":500,"currency":"eur"}`).expect(t, "its replay", http.StatusCreated, "")
			big := r.post(t, `{"ref":"big","amount":20000,"currency":"eur"}`)
			big.expect(t, "above the threshold", http.StatusConflict, problem.AwaitingApproval)
			missing := r.post(t, `{"ref":"odd","currency":"eur"}`)
			missing.expect(t, "amount missing", http.StatusConflict, problem.AwaitingApproval)
			if n := tr.calls.Load(); n != 1 {
				t.Fatalf("upstream calls = %d, want 1 (the intent below the threshold)", n)
			}
			for _, tc := range []struct {
				rp       reply
				evidence string
			}{{big, ""}, {missing, "no such key: amount"}} {
				st, err := store.Get(tc.rp.resp.Header.Get(HeaderKey))
				if err != nil {
					t.Fatal(err)
				}
				if st.Hold != journal.HoldAwaitingApproval || st.HoldReason != lifecycle.ReasonApproval || st.Status != journal.StatusPrepared {
					t.Errorf("held step: %s/%s (%s), want prepared/awaiting_approval (%s)", st.Status, st.Hold, st.HoldReason, lifecycle.ReasonApproval)
				}
				if !strings.Contains(st.Evidence, tc.evidence) {
					t.Errorf("evidence %q, want it to say %q", st.Evidence, tc.evidence)
				}
			}
			approve(t, store, big)
			r.post(t, `{"ref":"big","amount":20000,"currency":"eur","note":"other"}`).expect(t, "another body under the approval", http.StatusUnprocessableEntity, problem.PayloadMismatch)
			r.post(t, `{"ref":"big","amount":20000,"currency":"eur"}`).expect(t, "approved", http.StatusCreated, "")
			if n := tr.calls.Load(); n != 2 {
				t.Fatalf("upstream calls = %d, want 2", n)
			}
		})
	}
}

const budgetRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    key: {fields: [ref]}
    budget: {calls: 2, per: 1m}
`

// TestBudget: a route's budget lets two new intents of a caller through
// per minute; the third is held for review with reason budget (never
// refused), and an operator's approval sends it. Replays are not counted,
// and every caller has a budget of its own.
func TestBudget(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store := be.open(t)
			tr := &scriptedTransport{answers: []string{`{"id":"t_1"}`}}
			r := newProxyOn(t, store, time.Now, budgetRoute, tr, Options{})

			r.post(t, `{"ref":"1"}`).expect(t, "first", http.StatusCreated, "")
			r.post(t, `{"ref":"2"}`).expect(t, "second", http.StatusCreated, "")
			r.post(t, `{"ref":"1"}`).expect(t, "a replay", http.StatusCreated, "")
			third := r.post(t, `{"ref":"3"}`)
			third.expect(t, "third", http.StatusConflict, problem.OverBudget)
			if third.resp.Header.Get("Retry-After") == "" {
				t.Errorf("over budget without Retry-After")
			}
			r.post(t, `{"ref":"3"}`).expect(t, "third, again", http.StatusConflict, problem.OverBudget)
			st, err := store.Get(third.resp.Header.Get(HeaderKey))
			if err != nil {
				t.Fatal(err)
			}
			if st.Hold != journal.HoldAwaitingApproval || st.HoldReason != lifecycle.ReasonBudget || st.Status != journal.StatusPrepared {
				t.Errorf("third: %s/%s (%s), want prepared/awaiting_approval (budget)", st.Status, st.Hold, st.HoldReason)
			}
			r.postAs(t, "Bearer sk_test_other", `{"ref":"3"}`).expect(t, "another caller", http.StatusCreated, "")
			if n := tr.calls.Load(); n != 3 {
				t.Fatalf("upstream calls = %d, want 3", n)
			}
			approve(t, store, third)
			r.post(t, `{"ref":"3"}`).expect(t, "third, approved", http.StatusCreated, "")
			r.post(t, `{"ref":"3"}`).expect(t, "its replay", http.StatusCreated, "")
			if n := tr.calls.Load(); n != 4 {
				t.Fatalf("upstream calls = %d, want 4", n)
			}
		})
	}
}

const requiredRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    key: {fields: [ref]}
    approval: required
`

// TestMaxOpenHolds: a new intent that would be held while its caller has
// limits.max_open_holds holds gets 429 too-many-holds with Retry-After,
// and nothing is journaled; retries of held steps and other callers are
// answered as before.
func TestMaxOpenHolds(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			store := be.open(t)
			tr := &scriptedTransport{answers: []string{`{"id":"t_1"}`}}
			r := newProxyOn(t, store, time.Now, requiredRoute, tr, Options{MaxOpenHolds: 2})

			first := r.post(t, `{"ref":"1"}`)
			first.expect(t, "first", http.StatusConflict, problem.AwaitingApproval)
			r.post(t, `{"ref":"2"}`).expect(t, "second", http.StatusConflict, problem.AwaitingApproval)
			last, err := store.LastSeq()
			if err != nil {
				t.Fatal(err)
			}
			third := r.post(t, `{"ref":"3"}`)
			third.expect(t, "third", http.StatusTooManyRequests, problem.TooManyHolds)
			if ra := third.resp.Header.Get("Retry-After"); ra == "" || third.resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("third: Retry-After %q, Content-Type %q", ra, third.resp.Header.Get("Content-Type"))
			}
			if _, err := store.Get(third.resp.Header.Get(HeaderKey)); !errors.Is(err, journal.ErrNotFound) {
				t.Errorf("the refused intent was journaled: %v", err)
			}
			if seq, err := store.LastSeq(); err != nil || seq != last {
				t.Errorf("events after the refusal: last seq %d (was %d), %v", seq, last, err)
			}
			r.post(t, `{"ref":"1"}`).expect(t, "a held step's retry", http.StatusConflict, problem.AwaitingApproval)
			r.postAs(t, "Bearer sk_test_other", `{"ref":"3"}`).expect(t, "another caller", http.StatusConflict, problem.AwaitingApproval)
			approve(t, store, first)
			r.post(t, `{"ref":"3"}`).expect(t, "room again", http.StatusConflict, problem.AwaitingApproval)
			c, err := store.Count()
			if err != nil || c.Steps != 4 {
				t.Fatalf("count: %+v, %v; want 4 steps", c, err)
			}
			if n := tr.calls.Load(); n != 0 {
				t.Fatalf("upstream calls = %d, want none", n)
			}
		})
	}
}

// TestBudgetAcrossReplicas: two proxies on one PostgreSQL journal share a
// route's budget: of intents racing at its edge through both, exactly the
// budget's calls are sent, and the others are held with reason budget.
func TestBudgetAcrossReplicas(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t)
	tr := &scriptedTransport{answers: []string{`{"id":"t_1"}`}}
	route := strings.Replace(budgetRoute, "calls: 2", "calls: 3", 1)
	replicas := []*replica{
		newProxyOn(t, openPostgres(t, dsn, schema), time.Now, route, tr, Options{}),
		newProxyOn(t, openPostgres(t, dsn, schema), time.Now, route, tr, Options{}),
	}
	const n = 10
	var wg sync.WaitGroup
	replies := make([]reply, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = replicas[i%2].post(t, fmt.Sprintf(`{"ref":"%d"}`, i))
		}()
	}
	wg.Wait()
	sent, held := 0, 0
	for i, rp := range replies {
		switch {
		case rp.resp == nil:
			t.Fatalf("intent %d: no answer", i)
		case rp.resp.StatusCode == http.StatusCreated:
			sent++
		case rp.resp.StatusCode == http.StatusConflict && strings.Contains(rp.body, problem.OverBudget):
			held++
		default:
			t.Errorf("intent %d: %d %s", i, rp.resp.StatusCode, rp.body)
		}
	}
	if sent != 3 || held != n-3 || tr.calls.Load() != 3 {
		t.Fatalf("%d sent, %d held, %d upstream calls; want 3, %d, 3", sent, held, tr.calls.Load(), n-3)
	}
}

// TestHoldExpiry: a hold for approval nobody approved within the hold
// expiry is removed, never sent, with an expired event; the retry is a
// new request, held again. A hold for review is kept.
func TestHoldExpiry(t *testing.T) {
	store := backends[0].open(t)
	tr := &scriptedTransport{answers: []string{`{"id":"t_1"}`}}
	const expiry = 20 * time.Millisecond
	r := newProxyOn(t, store, time.Now, requiredRoute, tr, Options{HoldExpiry: expiry})
	held := r.post(t, `{"ref":"1"}`)
	held.expect(t, "held", http.StatusConflict, problem.AwaitingApproval)
	key := held.resp.Header.Get(HeaderKey)
	review := "review-" + key
	if _, err := store.Apply(context.Background(), review, func(*journal.Step) (journal.Change, error) {
		return journal.Change{Step: journal.Step{Key: review, API: "test", Route: "create", Status: journal.StatusPrepared,
			Hold: journal.HoldNeedsReview, HoldReason: lifecycle.ReasonVersionChanged}, Event: journal.EventHeld}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st, _ := store.Get(review)
	for !time.Now().After(st.UpdatedAt.Add(expiry)) { // the wall clock must pass the expiry
	}
	r.srv.sweeper().Pass(context.Background())
	if _, err := store.Get(key); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("expired hold kept: %v", err)
	}
	if _, err := store.Get(review); err != nil {
		t.Fatalf("hold for review: %v, want it kept", err)
	}
	evs, err := store.Events(0, 100)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Type != journal.EventExpired || evs[len(evs)-1].Key != key {
		t.Fatalf("events: %+v, %v; want the expiry last", evs, err)
	}
	r.post(t, `{"ref":"1"}`).expect(t, "the retry", http.StatusConflict, problem.AwaitingApproval)
	if tr.calls.Load() != 0 {
		t.Fatalf("upstream calls = %d, want none", tr.calls.Load())
	}
}

// TestMCPApprovalWhen: an MCP tool's approval.when reads the call's
// arguments as body, and its budget counts the caller's new calls; holds
// reach the agent as tool results, and an approval runs the call once.
func TestMCPApprovalWhen(t *testing.T) {
	ctx := context.Background()
	ts := newTicketServer(t)
	api, err := rules.Parse("tickets.yaml", []byte(`api: tickets
mcp: {path: /mcp}
tools:
  - name: create_ticket
    effect: irreversible
    key: {fields: [project, title]}
    approval: {when: 'has(body.priority) && body.priority == "high"'}
    budget: {calls: 1, per: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := startMCPProxy(t, Options{MCPServers: []MCPServer{{Name: "tickets", URL: ts.url, API: api}}})
	p.tickets = ts
	a := p.agent(viaGateway, "alice")
	call := func(args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: args})
		if err != nil {
			t.Fatalf("call %v: %v", args, err)
		}
		return res
	}
	if res := call(callArgs("ops", "a")); res.IsError {
		t.Fatalf("first call: %+v", res)
	}
	urgent := map[string]any{"project": "ops", "title": "b", "priority": "high"}
	if h := holdOf(t, call(urgent)); h.Type != problem.AwaitingApproval {
		t.Fatalf("urgent call: %+v, want awaiting-approval", h)
	}
	over := holdOf(t, call(callArgs("ops", "c")))
	if over.Type != problem.OverBudget || over.RetryAfter == 0 {
		t.Fatalf("second call within the minute: %+v, want over-budget with a retry hint", over)
	}
	if n := ts.calls.Load(); n != 1 {
		t.Fatalf("tool ran %d times, want 1", n)
	}
	if _, err := p.j.Apply(ctx, over.Key, admin.ApproveMutation("")); err != nil {
		t.Fatal(err)
	}
	if res := call(callArgs("ops", "c")); res.IsError {
		t.Fatalf("approved call: %+v", res)
	}
	if n := ts.calls.Load(); n != 2 {
		t.Fatalf("tool ran %d times, want 2", n)
	}
}
