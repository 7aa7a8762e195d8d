package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The console's browser tests drive Debian's chromium, headless, through
// the DevTools protocol. One browser serves every subtest (each in a tab of
// its own, so each has its own sessionStorage). Screenshots of failed
// subtests are written to $TOOLGUARD_TEST_ARTIFACTS (default
// e2e/artifacts, ignored by git).

const (
	operatorToken = "operator-s3cret"
	agentToken    = "agent-s3cret"
	// xss is planted in every field an agent or a provider controls.
	xss = `<img src=x onerror=alert(1)><script>alert(2)</script>`
)

// chromiumPath finds the browser. A missing browser fails the test in CI
// (.ci/run installs it) and skips it elsewhere, saying so.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("TOOLGUARD_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: the console's browser tests need it (.ci/run installs it with apt-get)")
	}
	skipped.Skip(t, "chromium", "chromium is not installed (apt-get install chromium); CI runs these tests")
	return ""
}

// artifactsDir is where screenshots of failed browser tests go.
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("TOOLGUARD_TEST_ARTIFACTS")
	if dir == "" {
		dir, _ = filepath.Abs("artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifacts: %v", err)
	}
	return dir
}

// browser is one headless Chromium shared by subtests.
type browser struct {
	ctx context.Context
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // containers run as root, where the sandbox cannot start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	if err := chromedp.Do(bctx); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return &browser{ctx: bctx}
}

// tab is one browser tab of a subtest; it records JavaScript dialogs
// (alert, confirm) that a planted script would open.
type tab struct {
	t       *testing.T
	ctx     context.Context
	mu      sync.Mutex
	dialogs []string
}

func (b *browser) tab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	tb := &tab{t: t, ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch d := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			msg = d.Message
		case page.EventJavascriptDialogOpening:
			msg = d.Message
		default:
			return
		}
		tb.mu.Lock()
		tb.dialogs = append(tb.dialogs, msg)
		tb.mu.Unlock()
		go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	})
	if err != nil {
		cancel()
		t.Fatalf("open a tab: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			tb.screenshot()
		}
		cancel()
	})
	return tb
}

// timeout bounds one browser step.
func (tb *tab) timeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(tb.ctx, 30*time.Second)
}

// screenshot saves the tab as a PNG named after the test.
func (tb *tab) screenshot() {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(tb.t.Name(), "_") + ".png"
	path := filepath.Join(artifactsDir(tb.t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("screenshot: %v", err)
		return
	}
	tb.t.Logf("screenshot of the failure: %s", path)
}

func (tb *tab) run(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v\npage text:\n%s", err, tb.pageText())
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) and decodes
// its value into out.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is true in the page.
func (tb *tab) waitJS(what, expr string) {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		tb.t.Fatalf("%s: %v\npage text:\n%s", what, err, tb.pageText())
	}
}

func (tb *tab) pageText() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// text returns the text of the first element sel matches, once there is
// one. It finds and reads the element in one evaluation: a live update may
// replace the element between a query of its node and a read of its text.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	ctx, cancel := tb.timeout()
	defer cancel()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? {text: e.textContent} : null })()`, sel)
	v, err := chromedp.Run(ctx, chromedp.Poll[struct {
		Text string `json:"text"`
	}](js, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v\npage text:\n%s", sel, err, tb.pageText())
	}
	return v.Text
}

// signIn opens the console and signs in with token.
func (tb *tab) signIn(adminURL, token string) {
	tb.t.Helper()
	tb.run(chromedp.Navigate(adminURL+"/ui/"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#signin-submit")),
		chromedp.WaitVisible(chromedp.CSS("#counts")))
	tb.waitJS("review queue", `document.body.dataset.view === "review"`)
}

// open navigates to a console address (#/...) and waits until its view
// is rendered.
func (tb *tab) open(adminURL, hash string) {
	tb.t.Helper()
	tb.run(chromedp.Navigate(adminURL + "/ui/#" + hash))
	tb.waitJS("view "+hash, fmt.Sprintf(`decodeURIComponent(document.body.dataset.rendered || "") === decodeURIComponent(%q)`, hash))
}

func (tb *tab) noDialogs() {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.dialogs) > 0 {
		tb.t.Fatalf("a planted script ran: dialogs %q", tb.dialogs)
	}
}

// consoleRoutes: refunds need approval (their card number is redacted);
// emails are irreversible with no way to look them up, so an unknown
// outcome is held for review.
const consoleRoutes = `  - name: create_refund
    match: POST /v1/invoices
    effect: irreversible
    key:
      fields: [customer, amount, card]
      optional: [card]
    redact: [card.number]
    approval: required
  - name: send_email
    match: POST /v1/emails
    effect: irreversible
    key:
      fields: [to, subject]
`

// consoleFixture is a toolguard with a held step of each kind, created by
// real calls through the proxy, in a workflow whose id is a planted script.
type consoleFixture struct {
	p                   *proc
	up                  *upstream
	approvalKey, review string
	workflow            string
}

// refundBody plants a script in a key field and a card number that the
// route redacts.
const refundBody = `{"customer":"c1 ` + xss + `","amount":10,"card":{"number":"4242424242424242"}}`

// refundPath has a query the operator must see, one parameter of it a
// secret the console must not.
const refundPath = "/v1/invoices?to_account=ATTACKER&api_key=sk_query_secret"

func newConsoleFixture(t *testing.T) *consoleFixture {
	t.Helper()
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), consoleRoutes)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN="+operatorToken, "TOOLGUARD_ADMIN_AGENT_TOKEN="+agentToken,
		"TOOLGUARD_UPSTREAM_TIMEOUT=1s")
	p := s.start(t)
	c := p.client(t)
	f := &consoleFixture{p: p, up: up, workflow: "wf-" + xss}
	r, b := post(t, c, up.URL+refundPath, refundBody, "Toolguard-Workflow", f.workflow)
	if r.StatusCode != http.StatusConflict {
		t.Fatalf("refund: %d %s, want 409 awaiting approval", r.StatusCode, b)
	}
	f.approvalKey = r.Header.Get("Toolguard-Key")
	// The provider fails with a 5xx: the outcome is unknown, and the
	// retry after the attempt settled is held for review.
	up.status.Store(http.StatusBadGateway)
	r, b = post(t, c, up.URL+"/v1/emails", `{"to":"a@example.com","subject":"hi"}`, "Toolguard-Workflow", f.workflow)
	up.status.Store(0)
	f.review = r.Header.Get("Toolguard-Key")
	if f.review == "" {
		t.Fatalf("email: %d %s: no key", r.StatusCode, b)
	}
	eventually(t, "email held for review", func() bool {
		r, _ := post(t, c, up.URL+"/v1/emails", `{"to":"a@example.com","subject":"hi"}`, "Toolguard-Workflow", f.workflow)
		return r.Header.Get("Toolguard-Outcome") == "blocked" && adminHold(t, p, f.review) == "needs_review"
	})
	cp := fmt.Sprintf(`{"goal":%q,"plan":["refund c1","email a@example.com"]}`, "goal "+xss)
	if code, body := wfRequest(t, p, "PUT", "/v1/workflows/"+urlPathEscape(f.workflow)+"/checkpoint", operatorToken, "", cp); code != 200 {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	return f
}

// utcTime is how the console shows a time.
var utcTime = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`)

func adminHold(t *testing.T, p *proc, key string) string {
	code, body := wfRequest(t, p, "GET", "/v1/steps/"+key, operatorToken, "", "")
	if code != 200 {
		return ""
	}
	m := regexp.MustCompile(`"hold": "([a-z_]*)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

func urlPathEscape(s string) string { return url.PathEscape(s) }

// TestConsole drives the web console in a real browser against a real
// toolguard whose held steps were created by real calls through the proxy.
// The subtests run in order on the same journal.
func TestConsole(t *testing.T) {
	b := newBrowser(t)
	f := newConsoleFixture(t)
	p := f.p
	row := func(key, sel string) string { return fmt.Sprintf(`tr[data-key=%q] %s`, key, sel) }

	t.Run("sign in", func(t *testing.T) {
		tb := b.tab(t)
		tb.run(chromedp.Navigate(p.adminURL+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), "guess"), chromedp.Click(chromedp.CSS("#signin-submit")))
		tb.waitJS("refusal", `document.querySelector("#signin-error").textContent.includes("not accepted")`)
		eval[string](tb, `document.querySelector("#token").value = ""`)
		tb.signIn(p.adminURL, operatorToken)
		if got := tb.text("#role"); got != "operator" {
			t.Errorf("role = %q, want operator", got)
		}
		// The header counts come from /metrics: two steps are held, and
		// three guarded calls were made (two blocked, one forwarded).
		tb.waitJS("held count", `document.querySelector("#count-held").textContent === "2"`)
		stored := eval[string](tb, `sessionStorage.getItem("toolguard.token") + "|" + document.cookie + "|" + location.href`)
		if stored != operatorToken+"|"+"|"+p.adminURL+"/ui/#/review" {
			t.Errorf("token storage: %q; want it in sessionStorage only, not in a cookie or the URL", stored)
		}
		tb.noDialogs()
	})

	t.Run("review queue", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		tb.run(chromedp.WaitVisible(chromedp.CSS(row(f.approvalKey, "button.approve"))),
			chromedp.WaitVisible(chromedp.CSS(row(f.review, "button.resolve"))))
		if got := tb.text(row(f.review, ".reason")); got == "" {
			t.Errorf("the review row shows no reason")
		}
		// The workflow id is a planted script: shown as text, run never.
		if got := tb.text(row(f.approvalKey, `a[href^="#/workflow/"]`)); got != f.workflow {
			t.Errorf("workflow cell = %q, want the literal %q", got, f.workflow)
		}
		// Every body field is shown with the card number redacted, and the
		// target with its query (the api_key masked); the script planted
		// in the customer is text.
		if got := tb.text(row(f.approvalKey, "code.target")); !strings.HasSuffix(got, "/v1/invoices?to_account=ATTACKER&api_key=[redacted]") {
			t.Errorf("target = %q, want the query with api_key masked", got)
		}
		fields := tb.text(row(f.approvalKey, ".request-fields"))
		for _, want := range []string{"customer", xss, "amount 10", `card.number "[redacted]"`} {
			if !strings.Contains(fields, want) {
				t.Errorf("key fields %q do not show %q", fields, want)
			}
		}
		if strings.Contains(fields, "4242") {
			t.Errorf("key fields %q show the redacted card number", fields)
		}
		if n := eval[int](tb, `document.querySelectorAll(".request-fields img, .request-fields script").length`); n != 0 {
			t.Errorf("the request fields hold %d planted elements", n)
		}
		// The step held on a retry keeps its request fields too.
		if got := tb.text(row(f.review, ".request-fields")); !strings.Contains(got, `to "a@example.com"`) {
			t.Errorf("review row request fields = %q", got)
		}
		tb.noDialogs()
	})

	t.Run("key prefix and copy", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		link := row(f.approvalKey, "a.key-short")
		tb.run(chromedp.WaitVisible(chromedp.CSS(link)))
		if got := tb.text(link); got != f.approvalKey[:12]+"…" {
			t.Errorf("key cell = %q, want the prefix %q", got, f.approvalKey[:12]+"…")
		}
		if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%q).title`, link)); got != f.approvalKey {
			t.Errorf("key title = %q, want the full key", got)
		}
		if eval[bool](tb, fmt.Sprintf(`document.querySelector(%q).innerText.includes(%q)`, "#main table", f.approvalKey)) {
			t.Errorf("the review table shows a full key")
		}
		// With the clipboard permitted, the button copies the full key.
		origin := p.adminURL
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			perm := cdpbrowser.SetPermissionParams{Permission: &cdpbrowser.PermissionDescriptor{Name: name, AllowWithoutSanitization: true},
				Setting: cdpbrowser.PermissionSettingGranted, Origin: origin}
			if _, err := chromedp.CallBrowser(tb.ctx, cdpbrowser.SetPermission, perm); err != nil {
				t.Fatalf("grant %s: %v", name, err)
			}
		}
		if _, err := chromedp.Call(tb.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
			t.Fatalf("focus emulation: %v", err)
		}
		copyBtn := row(f.approvalKey, "button.copy-key")
		tb.run(chromedp.Click(chromedp.CSS(copyBtn)))
		tb.waitJS("copied", fmt.Sprintf(`document.querySelector(%q).textContent === "Copied"`, copyBtn))
		if got := eval[string](tb, `navigator.clipboard.readText()`); got != f.approvalKey {
			t.Errorf("clipboard = %q, want the full key", got)
		}
		// Without a clipboard, the full key is shown selected in a
		// read-only input instead.
		eval[bool](tb, `Object.defineProperty(navigator, "clipboard", {value: undefined, configurable: true}); true`)
		tb.run(chromedp.Click(chromedp.CSS(row(f.review, "button.copy-key"))))
		input := row(f.review, "input.key-full")
		tb.run(chromedp.WaitVisible(chromedp.CSS(input)))
		got := eval[string](tb, fmt.Sprintf(`(() => { const i = document.querySelector(%q);
			return [i.value, i.readOnly, document.activeElement === i, i.selectionStart, i.selectionEnd].join("|"); })()`, input))
		if want := f.review + "|true|true|0|64"; got != want {
			t.Errorf("fallback input = %q, want %q (value|readonly|focused|selection)", got, want)
		}
		tb.noDialogs()
	})

	t.Run("times are UTC", func(t *testing.T) {
		tb := b.tab(t)
		// A browser far from UTC: a local time would show here.
		if _, err := chromedp.Call(tb.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Los_Angeles"}); err != nil {
			t.Fatalf("time zone: %v", err)
		}
		tb.signIn(p.adminURL, operatorToken)
		if got := eval[string](tb, fmt.Sprintf(`document.querySelector(%q).title`, row(f.review, "time"))); !utcTime.MatchString(got) {
			t.Errorf("age title = %q, want a UTC time", got)
		}
		tb.open(p.adminURL, "/step/"+f.review)
		_, body := wfRequest(t, p, "GET", "/v1/steps/"+f.review, operatorToken, "", "")
		var step struct {
			Created time.Time `json:"created_at"`
		}
		if err := json.Unmarshal([]byte(body), &step); err != nil {
			t.Fatalf("step: %v in %s", err, body)
		}
		if got, want := tb.text("[data-field=created]"), step.Created.UTC().Format("2006-01-02 15:04:05")+" UTC"; got != want {
			t.Errorf("created = %q, want %q", got, want)
		}
		for _, sel := range []string{"[data-field=updated]", ".timeline time"} {
			if got := tb.text(sel); !utcTime.MatchString(got) {
				t.Errorf("%s = %q, want a UTC time", sel, got)
			}
		}
	})

	t.Run("favicon", func(t *testing.T) {
		for _, path := range []string{"/favicon.ico", "/ui/static/favicon.ico", "/ui/static/favicon.svg"} {
			resp, err := http.Get(p.adminURL + path) // no token: the icon is public
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
				t.Errorf("GET %s: %d %q, want 200 and an image", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		if got := eval[int](tb, `fetch(document.querySelector("link[rel=icon]").href).then(r => r.status)`); got != 200 {
			t.Errorf("the page's icon link: %d, want 200", got)
		}
	})

	t.Run("agent token is read-only", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, agentToken)
		tb.waitJS("the agent's review queue", `document.getElementById("role").textContent === "agent (read-only)" && !!document.querySelector("main table, main .notice")`)
		// The agent token sees only the scope its caller presents, and the
		// console presents none: no tenant's held step is listed.
		if n := eval[int](tb, fmt.Sprintf(`document.querySelectorAll('tr[data-key=%q]').length`, f.approvalKey)); n != 0 {
			t.Errorf("the agent token lists a tenant's held step")
		}
		buttons := eval[int](tb, `document.querySelectorAll("button.approve, button.resolve").length`)
		if buttons != 0 {
			t.Errorf("the agent sees %d approve/resolve buttons, want none", buttons)
		}
		// A forged request with the agent's token from the page itself.
		forge := fmt.Sprintf(`fetch("/v1/steps/%s/approve", {method: "POST", headers: {Authorization: "Bearer %s"}}).then(r => r.status)`, f.approvalKey, agentToken)
		status := eval[int](tb, forge)
		if status != http.StatusForbidden {
			t.Errorf("forged approve with the agent token: %d, want 403", status)
		}
		if h := adminHold(t, p, f.approvalKey); h != "awaiting_approval" {
			t.Errorf("after the forged approve, hold = %q, want awaiting_approval", h)
		}
	})

	t.Run("approve and watch the state change", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		tb.run(chromedp.Navigate(p.adminURL + "/ui/#/step/" + f.approvalKey))
		tb.waitJS("step page", `document.querySelector("[data-field=hold]") && document.querySelector("[data-field=hold]").textContent === "awaiting_approval"`)
		if got := tb.text("[data-field='key fields']"); !strings.Contains(got, xss) || !strings.Contains(got, "[redacted]") {
			t.Errorf("step page key fields = %q", got)
		}
		eval[bool](tb, `window.noReload = true`)
		tb.run(chromedp.Click(chromedp.CSS("button.approve")),
			chromedp.WaitVisible(chromedp.CSS("dialog[open] input[name=note]")))
		// The dialog shows what the approval lets through.
		if got := tb.text("dialog[open] code.target"); !strings.Contains(got, "to_account=ATTACKER") || strings.Contains(got, "sk_query_secret") {
			t.Errorf("approve dialog target = %q", got)
		}
		if got := tb.text("dialog[open] .request-fields"); !strings.Contains(got, "amount 10") || !strings.Contains(got, `card.number "[redacted]"`) {
			t.Errorf("approve dialog request fields = %q", got)
		}
		tb.run(chromedp.SendKeys(chromedp.CSS("dialog[open] input[name=note]"), "ok "+xss),
			chromedp.Click(chromedp.CSS("dialog[open] button.confirm")))
		tb.waitJS("approved", `!document.querySelector("[data-field=hold]") && document.querySelector("[data-field=decision]").textContent === "approved"`)
		// The agent's retry is sent now; the open page follows the journal.
		r, b := post(t, p.client(t), f.up.URL+refundPath, refundBody, "Toolguard-Workflow", f.workflow)
		if r.StatusCode != 201 || r.Header.Get("Toolguard-Outcome") != "forwarded" {
			t.Fatalf("retry after approval: %d %q %s", r.StatusCode, r.Header.Get("Toolguard-Outcome"), b)
		}
		tb.waitJS("committed without a reload", `document.querySelector("[data-field=status]").textContent === "committed" && window.noReload === true`)
		if got := tb.text(".timeline .note q"); got != "ok "+xss {
			t.Errorf("timeline note = %q, want the literal note", got)
		}
		tb.noDialogs()
	})

	t.Run("resolve an ambiguous step", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		tb.run(chromedp.Click(chromedp.CSS(row(f.review, "button.resolve"))),
			chromedp.WaitVisible(chromedp.CSS("dialog[open] select[name=outcome]")))
		// The dialog shows the call being resolved, not only its key.
		if got := tb.text("dialog[open] .request-fields"); !strings.Contains(got, `to "a@example.com"`) || !strings.Contains(got, `subject "hi"`) {
			t.Errorf("resolve dialog request fields = %q", got)
		}
		if got := tb.text("dialog[open] code.target"); !strings.HasSuffix(got, "/v1/emails") {
			t.Errorf("resolve dialog target = %q", got)
		}
		tb.run(chromedp.SetValue(chromedp.CSS("dialog[open] select[name=outcome]"), "committed"),
			chromedp.SendKeys(chromedp.CSS("dialog[open] input[name=operation_id]"), "op-"+xss),
			chromedp.SendKeys(chromedp.CSS("dialog[open] input[name=note]"), "seen in the mail log "+xss),
			chromedp.Click(chromedp.CSS("dialog[open] button.confirm")))
		tb.waitJS("gone from the queue", fmt.Sprintf(`!document.querySelector(%q) && document.body.dataset.view === "review"`, fmt.Sprintf(`tr[data-key=%q]`, f.review)))
		tb.run(chromedp.Navigate(p.adminURL + "/ui/#/step/" + f.review))
		tb.waitJS("resolved step", `document.querySelector("[data-field=status]") && document.querySelector("[data-field=status]").textContent === "committed"`)
		if got := tb.text("[data-field='operation id']"); got != "op-"+xss {
			t.Errorf("operation id = %q, want the literal %q", got, "op-"+xss)
		}
		if got := tb.text("[data-field=evidence]"); got != "operator: seen in the mail log "+xss {
			t.Errorf("evidence = %q", got)
		}
		tb.waitJS("held count", `document.querySelector("#count-held").textContent === "0"`)
		// One ambiguous email and one approved refund; resolving sends nothing.
		if got := f.up.effects.Load(); got != 2 {
			t.Errorf("upstream effects = %d, want 2", got)
		}
		tb.noDialogs()
	})

	t.Run("workflow resume packet", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		tb.run(chromedp.Navigate(p.adminURL + "/ui/#/workflows"))
		tb.waitJS("workflow list", `document.querySelectorAll("tr[data-id]").length === 1`)
		tb.run(chromedp.Click(chromedp.CSS(`tr[data-id] a`)))
		tb.waitJS("resume packet", `!!document.querySelector("#next-safe-action p")`)
		if got := tb.text("#next-safe-action p"); !strings.HasPrefix(got, "continue:") {
			t.Errorf("next safe action = %q, want continue: every step has an outcome", got)
		}
		if got := tb.text(".wf-id"); got != f.workflow {
			t.Errorf("workflow id = %q, want the literal %q", got, f.workflow)
		}
		if got := tb.text("[data-field=goal]"); got != "goal "+xss {
			t.Errorf("checkpoint goal = %q", got)
		}
		steps := eval[int](tb, `document.querySelectorAll("#main tr[data-key]").length`)
		if steps != 2 {
			t.Errorf("workflow shows %d steps, want 2", steps)
		}
		tb.noDialogs()
	})

	t.Run("step search", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		rows := func(query string) int {
			t.Helper()
			tb.open(p.adminURL, "/steps?"+query)
			return eval[int](tb, `document.querySelectorAll("#main tbody tr[data-key]").length`)
		}
		tests := []struct {
			query string
			want  int
		}{
			{query: "", want: 2},
			{query: "route=send_email", want: 1},
			{query: "key=" + f.review[:6], want: 1},
			{query: "key=" + f.review, want: 1},
			{query: "key=" + f.review + "&status=failed", want: 0},
			{query: "status=committed&hold=none", want: 2},
			{query: "hold=needs_review", want: 0},
			{query: "workflow=" + url.QueryEscape(f.workflow), want: 2},
		}
		for _, tc := range tests {
			if got := rows(tc.query); got != tc.want {
				t.Errorf("#/steps?%s: %d rows, want %d", tc.query, got, tc.want)
			}
		}
		tb.run(chromedp.Navigate(p.adminURL + "/ui/#/step/" + f.approvalKey))
		tb.waitJS("step page", `!!document.querySelector("[data-field='body hash']")`)
		for field, want := range map[string]string{"response": "201", "attempt": "1", "verification": "none"} {
			if got := tb.text(fmt.Sprintf("[data-field=%q]", field)); !strings.HasPrefix(got, want) {
				t.Errorf("%s = %q, want %s…", field, got, want)
			}
		}
		if got := tb.text("[data-field='response hash']"); len(got) != 64 {
			t.Errorf("response hash = %q", got)
		}
		tb.noDialogs()
	})

	t.Run("planted strings stay inert", func(t *testing.T) {
		tb := b.tab(t)
		tb.signIn(p.adminURL, operatorToken)
		for _, view := range []string{"/steps", "/events", "/step/" + f.review, "/workflow/" + urlPathEscape(f.workflow)} {
			tb.open(p.adminURL, view)
			planted := eval[int](tb, `document.querySelectorAll("#main img, #main script, dialog img").length`)
			if planted != 0 {
				t.Errorf("%s: %d planted elements were parsed as HTML", view, planted)
			}
		}
		body := tb.text("#main")
		if !strings.Contains(body, xss) {
			t.Errorf("the planted string is not shown literally on the workflow page:\n%s", body)
		}
		tb.noDialogs()
	})

	t.Run("content security policy", func(t *testing.T) {
		resp, err := http.Get(p.adminURL + "/ui/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("Content-Security-Policy = %q", csp)
		}
	})
}

// TestConsoleScreenshots takes the README's screenshots of a realistic
// run: TOOLGUARD_SCREENSHOTS=../docs go test -run TestConsoleScreenshots ./e2e/
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv("TOOLGUARD_SCREENSHOTS")
	if dir == "" {
		t.Skip("set TOOLGUARD_SCREENSHOTS to a directory to take the README's screenshots")
	}
	b := newBrowser(t)
	up := newUpstream(t, false)
	routes := `  - name: create_invoice
    match: PUT /v1/things/{id}
    effect: irreversible
    native_idempotency: {header: Idempotency-Key}
` + consoleRoutes
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), routes)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN="+operatorToken, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
	p := s.start(t)
	c := p.client(t)
	wf := "refund-order-4711"
	req, _ := http.NewRequest("PUT", up.URL+"/v1/things/inv-4711", strings.NewReader(`{"customer":"cus_4711","amount":12900}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Toolguard-Workflow", wf)
	do(t, c, req)
	post(t, c, up.URL+"/v1/invoices", `{"customer":"cus_4711","amount":12900}`, "Toolguard-Workflow", wf)
	up.status.Store(http.StatusBadGateway)
	r, _ := post(t, c, up.URL+"/v1/emails", `{"to":"jane@example.com","subject":"Your refund"}`, "Toolguard-Workflow", wf)
	up.status.Store(0)
	key := r.Header.Get("Toolguard-Key")
	eventually(t, "email held", func() bool {
		post(t, c, up.URL+"/v1/emails", `{"to":"jane@example.com","subject":"Your refund"}`, "Toolguard-Workflow", wf)
		return adminHold(t, p, key) == "needs_review"
	})
	cp := `{"goal":"Refund order 4711 and tell the customer","constraints":["refund at most the amount paid"],"plan":["invoice the correction","refund the card","email the customer"]}`
	if code, body := wfRequest(t, p, "PUT", "/v1/workflows/"+wf+"/checkpoint", operatorToken, "", cp); code != 200 {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	tb := b.tab(t)
	tb.signIn(p.adminURL, operatorToken)
	tb.waitJS("counts", `document.querySelector("#count-held").textContent === "2"`)
	shot := func(name string) {
		png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("console-review.png")
	tb.run(chromedp.Navigate(p.adminURL + "/ui/#/workflow/" + wf))
	tb.waitJS("resume packet", `!!document.querySelector("#next-safe-action p")`)
	shot("console-workflow.png")
}
