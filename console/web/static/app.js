// toolguard console. It calls the admin JSON API with the token in a header
// and builds every element with DOM calls and textContent: no data ever goes
// through innerHTML, so stored values render as text.
'use strict';

(function () {
  const store = window.sessionStorage;
  const POLL_MS = 1000;
  // pollGen identifies the current polling loop: signing out and in again
  // starts a new one and ends the old.
  const state = { lastSeq: 0, feed: [], refreshTimer: 0, busy: false, polling: false, pollGen: 0 };

  // ---- DOM helpers -------------------------------------------------------

  // el builds an element; attrs are set as attributes (never on*),
  // children are nodes or strings (text nodes).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) throw new Error('no inline handlers');
      e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  const main = () => document.getElementById('main');
  function show(...nodes) { main().replaceChildren(...nodes); }
  function text(id, v) { const e = document.getElementById(id); if (e) e.textContent = v; }
  function link(href, label) { return el('a', { href }, label); }
  // stepLink links a step by its key's prefix; the whole key is in the
  // title and behind the copy button.
  function stepLink(key) {
    if (!key) return '—';
    return el('span', { class: 'key-ref' },
      el('a', { href: '#/step/' + encodeURIComponent(key), title: key, class: 'key-short' }, short(key)), ' ', copyButton(key));
  }

  // copyButton copies a key to the clipboard; where the page may not use
  // the clipboard, it shows the whole key selected in a read-only input
  // instead, for the operator to copy by hand.
  function copyButton(key) {
    const b = el('button', { type: 'button', class: 'copy-key', title: 'Copy the full key', 'aria-label': 'Copy the full key' }, 'Copy');
    b.addEventListener('click', async () => {
      try {
        if (!navigator.clipboard || !navigator.clipboard.writeText) throw new Error('no clipboard');
        await navigator.clipboard.writeText(key);
        b.textContent = 'Copied';
        setTimeout(() => { b.textContent = 'Copy'; }, 1500);
      } catch (e) {
        let input = b.parentNode && b.parentNode.querySelector('input.key-full');
        if (!input) {
          input = el('input', { class: 'key-full', readonly: true, value: key, size: key.length + 2, 'aria-label': 'Full key (selected: copy it)' });
          b.after(' ', input);
        }
        input.focus();
        input.select();
      }
    });
    return b;
  }

  // utc shows a time as "2026-12-01 20:15:03 UTC": one zone for every
  // operator, whatever the browser's.
  function utc(t) {
    const d = new Date(t);
    if (!t || Number.isNaN(d.getTime())) return '';
    return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }
  function wfLink(id) { return id ? link('#/workflow/' + encodeURIComponent(id), id) : '—'; }
  function age(t) {
    if (!t) return '';
    const s = Math.max(0, Math.round((Date.now() - new Date(t).getTime()) / 1000));
    if (s < 60) return s + 's';
    if (s < 3600) return Math.floor(s / 60) + 'm';
    if (s < 86400) return Math.floor(s / 3600) + 'h';
    return Math.floor(s / 86400) + 'd';
  }
  // ago is age(t) with the UTC time in the title.
  function ago(t) { return t ? el('time', { datetime: t, title: utc(t) }, age(t)) : ''; }
  function badge(v, cls) { return v ? el('span', { class: 'badge ' + (cls || v) }, v) : ''; }
  // observedBadge marks an observation of observe mode: a call forwarded
  // untouched, never replayed, which no enforcement decided.
  function observedBadge(s) {
    return s.observed ? [' ', el('span', { class: 'badge observed', title: 'observe mode: forwarded untouched, never replayed' }, 'observed')] : '';
  }
  function table(headers, rows, cls) {
    return el('table', { class: cls || '' },
      el('thead', null, el('tr', null, headers.map((h) => el('th', null, h)))),
      el('tbody', null, rows));
  }
  function dl(pairs) {
    return el('dl', null, pairs.filter((p) => p[1] !== undefined && p[1] !== '' && p[1] !== null)
      .map(([k, v]) => [el('dt', null, k), el('dd', { 'data-field': k }, v)]));
  }
  function notice(msg, cls) { return el('p', { class: 'notice ' + (cls || '') }, msg); }

  // ---- session and API ---------------------------------------------------

  const token = () => store.getItem('toolguard.token') || '';
  const role = () => store.getItem('toolguard.role') || '';
  const operator = () => role() === 'operator';

  class APIError extends Error {
    constructor(status, detail) { super(detail); this.status = status; }
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = { Accept: 'application/json' };
    if (token()) headers.Authorization = 'Bearer ' + token();
    if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(path, {
      method: opts.method || 'GET', headers, cache: 'no-store', credentials: 'omit',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const isText = (resp.headers.get('Content-Type') || '').startsWith('text/plain');
    const data = isText ? await resp.text() : await resp.json().catch(() => null);
    if (resp.status === 401 && !opts.signin) {
      signOut('Your token was not accepted; sign in again.');
      throw new APIError(401, 'unauthorized');
    }
    if (!resp.ok) throw new APIError(resp.status, (data && (data.detail || data.title)) || resp.statusText);
    return data;
  }

  function signOut(msg) {
    store.removeItem('toolguard.token');
    store.removeItem('toolguard.role');
    state.polling = false;
    document.getElementById('nav').hidden = true;
    document.getElementById('counts').hidden = true;
    document.getElementById('who').hidden = true;
    if (location.hash !== '#/signin') location.hash = '#/signin';
    renderSignIn(msg);
  }

  function renderSignIn(msg) {
    const input = el('input', { id: 'token', type: 'password', autocomplete: 'off', placeholder: 'operator or agent token', size: 48 });
    const err = el('p', { id: 'signin-error', class: 'error', role: 'alert' }, msg || '');
    const form = el('form', { id: 'signin', class: 'signin' },
      el('h1', null, 'Sign in'),
      el('p', null, 'Paste the admin token: the operator token approves and resolves, the agent token gives a read-only view. ' +
        'It is kept in this tab only (sessionStorage) and sent in a header, never in a URL or a cookie.'),
      el('p', { class: 'hint' }, 'With no admin.token configured, toolguard serve generated the operator token on its first start: ',
        el('code', null, 'cat admin-token'), ' in the directory of its journal (the path is in its log).'),
      el('label', { for: 'token' }, 'Token '), input, ' ', el('button', { type: 'submit', id: 'signin-submit' }, 'Sign in'), err);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      store.setItem('toolguard.token', input.value.trim());
      try {
        const who = await api('/v1/whoami', { signin: true });
        store.setItem('toolguard.role', who.role);
        input.value = '';
        start();
        location.hash = '#/review';
      } catch (e) {
        store.removeItem('toolguard.token');
        err.textContent = e.status === 401 ? 'That token was not accepted.' : 'Sign-in failed: ' + e.message;
      }
    });
    show(form);
    input.focus();
  }

  // ---- header: counts from /metrics, health from /readyz ------------------

  // metric sums the samples of a Prometheus text metric whose labels
  // contain every pair in want.
  function metric(textBody, name, want) {
    let sum = 0;
    let seen = false;
    for (const line of textBody.split('\n')) {
      if (!line.startsWith(name)) continue;
      const m = /^([a-z_]+)(\{([^}]*)\})? ([0-9.eE+-]+|NaN)$/.exec(line);
      if (!m || m[1] !== name) continue;
      const labels = {};
      for (const part of (m[3] || '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[part[1]] = part[2];
      if (Object.entries(want || {}).every(([k, v]) => (Array.isArray(v) ? v.includes(labels[k]) : labels[k] === v))) {
        sum += Number(m[4]);
        seen = true;
      }
    }
    return seen ? sum : null;
  }

  async function refreshCounts() {
    try {
      const m = await api('/metrics');
      const guarded = metric(m, 'toolguard_requests_total', { outcome: ['forwarded', 'replayed', 'recovered', 'blocked'] });
      text('count-guarded', guarded === null ? '0' : String(guarded));
      const replayed = metric(m, 'toolguard_requests_total', { outcome: 'replayed' });
      text('count-replayed', replayed === null ? '0' : String(replayed));
      const held = metric(m, 'toolguard_held_steps');
      text('count-held', held === null ? '0' : String(held));
      const observed = metric(m, 'toolguard_observed_total');
      const stopped = metric(m, 'toolguard_observed_total', { would: ['replay', 'wait'] });
      document.getElementById('count-observed-box').hidden = !observed;
      text('count-observed', observed ? String(observed) + ' · would stop ' + String(stopped || 0) : '0');
      const size = metric(m, 'toolguard_journal_size_bytes');
      let health = 'ok';
      try { await api('/readyz'); } catch (e) { health = 'not ready'; }
      if (size !== null) health += ' · ' + (size / 1048576).toFixed(1) + ' MiB';
      text('journal-health', health);
    } catch (e) {
      text('journal-health', 'unreachable');
    }
  }

  // ---- live events: poll /v1/events?after= --------------------------------

  // findTail finds the latest event seq with a binary search over after=,
  // so a long journal is not read from its start.
  async function findTail() {
    const has = async (after) => (await api('/v1/events?limit=1&after=' + after)).events.length > 0;
    if (!(await has(0))) return 0;
    let lo = 0; let hi = 1;
    while (await has(hi)) { lo = hi; hi *= 2; }
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await has(mid)) lo = mid; else hi = mid;
    }
    return hi;
  }

  async function poll(gen) {
    if (!state.polling || gen !== state.pollGen) return;
    try {
      const page = await api('/v1/events?limit=200&after=' + state.lastSeq);
      if (page.events.length > 0) {
        state.lastSeq = page.events[page.events.length - 1].seq;
        state.feed = page.events.concat(state.feed).slice(0, 200);
        text('live', 'last event #' + state.lastSeq + ': ' + page.events[page.events.length - 1].type);
        refreshCounts();
        scheduleRefresh();
      }
    } catch (e) { /* shown by the next successful poll */ }
    setTimeout(() => poll(gen), POLL_MS);
  }

  // scheduleRefresh re-renders the current view after new events, unless
  // the operator is in the middle of a confirmation.
  function scheduleRefresh() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(() => {
      // Not under an open confirmation (it re-renders when it closes), and
      // not over a render in progress: try again shortly.
      if (document.querySelector('dialog[open]')) return;
      if (state.busy) { scheduleRefresh(); return; }
      render(true);
    }, 150);
  }

  async function start() {
    document.getElementById('nav').hidden = false;
    document.getElementById('counts').hidden = false;
    document.getElementById('who').hidden = false;
    text('role', operator() ? 'operator' : 'agent (read-only)');
    document.body.dataset.role = role();
    refreshCounts();
    if (!state.polling) {
      state.polling = true;
      const gen = ++state.pollGen;
      try { state.lastSeq = await findTail(); } catch (e) { state.lastSeq = 0; }
      poll(gen);
    }
  }

  // ---- confirmation dialogs ----------------------------------------------

  // confirmDialog asks before a mutation; onConfirm gets the form's values
  // and returns a promise; its error is shown in the dialog.
  function confirmDialog(title, key, fields, confirmLabel, onConfirm) {
    const err = el('p', { class: 'error', role: 'alert' });
    const ok = el('button', { type: 'submit', class: 'confirm', value: 'confirm' }, confirmLabel);
    const cancel = el('button', { type: 'button', class: 'cancel' }, 'Cancel');
    const form = el('form', { method: 'dialog' }, el('h2', null, title),
      el('p', null, 'Step ', el('code', { class: 'key-short', title: key }, short(key)), ' ', copyButton(key)),
      fields, el('div', { class: 'buttons' }, cancel, ' ', ok), err);
    const dlg = el('dialog', { class: 'confirm-dialog' }, form);
    cancel.addEventListener('click', () => { dlg.close(); dlg.remove(); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      ok.disabled = true;
      try {
        await onConfirm(new FormData(form));
        dlg.close();
        dlg.remove();
        render(true);
      } catch (e) {
        err.textContent = e.status === 403 ? 'Forbidden: ' + e.message : e.message;
        ok.disabled = false;
      }
    });
    document.body.append(dlg);
    dlg.showModal();
  }

  function approve(step) {
    confirmDialog('Approve this call?', step.key,
      [el('p', null, 'The next retry of exactly this request (body hash ', el('code', null, short(step.body_hash)), ') will be sent to ',
        el('code', { class: 'target' }, step.method + ' ' + step.target), '.'),
       requestFields(step),
       el('label', null, 'Note ', el('input', { name: 'note', size: 40 }))],
      'Approve', (f) => api('/v1/steps/' + encodeURIComponent(step.key) + '/approve', { method: 'POST', body: { note: f.get('note') || '' } }));
  }

  function resolve(step) {
    const outcome = el('select', { name: 'outcome', class: 'outcome' },
      el('option', { value: 'committed' }, 'committed: it took effect'),
      el('option', { value: 'not_executed' }, 'not executed: safe to send again'));
    confirmDialog('Resolve this step?', step.key,
      [el('p', null, 'The call: ', el('code', { class: 'target' }, step.method + ' ' + step.target), ' (body hash ', el('code', null, short(step.body_hash)), ').'),
       requestFields(step),
       el('p', null, 'Say what happened upstream. "committed" answers retries without sending; "not executed" lets the next retry be sent.'),
       el('label', null, 'Outcome ', outcome), el('br'),
       el('label', null, 'Operation id ', el('input', { name: 'operation_id', size: 30 })), el('br'),
       el('label', null, 'Note ', el('input', { name: 'note', size: 40 })), el('br'),
       landingWarning(step),
       el('label', null, el('input', { type: 'checkbox', name: 'force', class: 'force' }),
         ' resolve "not executed" even if an interrupted attempt may still land at the provider')],
      'Resolve', (f) => api('/v1/steps/' + encodeURIComponent(step.key) + '/resolve', { method: 'POST',
        body: { outcome: f.get('outcome'), operation_id: f.get('operation_id') || '', note: f.get('note') || '', force: f.get('force') === 'on' } }));
  }

  // landingWarning says until when an interrupted attempt of a taken-over
  // step may still land: "not executed" is refused before then unless
  // forced, since the next retry would send it a second time.
  function landingWarning(step) {
    if (!step.settles_at || new Date(step.settles_at) <= new Date()) return '';
    return el('p', { class: 'warning', role: 'note' }, 'An interrupted attempt of this call may still land at the provider until ' +
      utc(step.settles_at) +
      ': "not executed" is refused before then, because the next retry would send it a second time.');
  }

  function actions(step) {
    if (!operator() || !step.hold) return '';
    const out = [];
    if (step.hold === 'awaiting_approval') {
      const b = el('button', { type: 'button', class: 'approve', 'data-key': step.key }, 'Approve…');
      b.addEventListener('click', () => approve(step));
      out.push(b, ' ');
    }
    const r = el('button', { type: 'button', class: 'resolve', 'data-key': step.key }, 'Resolve…');
    r.addEventListener('click', () => resolve(step));
    out.push(r);
    return out;
  }

  const short = (h) => (h ? h.slice(0, 12) + '…' : '');

  // keyFields lists a step's key summary (redaction applied by the proxy):
  // field and value, or the member name alone for a body keyed whole.
  function keyFields(step) {
    const fs = step.key_fields || [];
    if (!fs.length) return '';
    return el('ul', { class: 'key-fields' }, fs.map((f) => el('li', null, el('span', { class: 'kf-name' }, f.field),
      f.value ? [' ', el('code', { class: 'kf-value' }, f.value)] : '')));
  }

  // requestFields lists every body field of a held step with its value
  // (redact paths masked, long values cut by the proxy), so that the
  // operator sees what an approval lets through; the key fields alone when
  // the step kept no request fields.
  function requestFields(step) {
    const fs = step.request_fields || [];
    if (!fs.length) return keyFields(step);
    return el('div', { class: 'request' }, el('p', null, 'Request body, every field:'),
      el('ul', { class: 'request-fields' }, fs.map((f) => el('li', null, el('span', { class: 'rf-name' }, f.field),
        ' ', el('code', { class: 'rf-value' }, f.value)))));
  }

  // ---- views ---------------------------------------------------------------

  async function viewReview() {
    const [a, r] = await Promise.all([api('/v1/steps?hold=awaiting_approval'), api('/v1/steps?hold=needs_review')]);
    const held = a.steps.concat(r.steps).sort((x, y) => new Date(x.updated_at) - new Date(y.updated_at));
    const rows = held.map((s) => el('tr', { 'data-key': s.key, class: 'held' },
      el('td', null, stepLink(s.key)), el('td', null, badge(s.hold)), el('td', { class: 'reason' }, s.hold_reason || '', s.last_error ? el('div', { class: 'detail' }, s.last_error) : ''),
      el('td', null, s.api + ' / ' + s.route), el('td', null, wfLink(s.workflow)), el('td', null, String(s.attempt)),
      el('td', null, ago(s.updated_at)),
      el('td', { class: 'summary' }, el('code', { class: 'target' }, s.method + ' ' + s.target), el('br'), 'body ', el('code', null, short(s.body_hash)), requestFields(s)),
      el('td', { class: 'actions' }, actions(s))));
    show(el('h1', null, 'Review queue'),
      el('p', null, operator() ? 'Held steps, oldest first. Approving or resolving asks for confirmation.'
        : 'Held steps, oldest first. This token is read-only: approvals and resolutions need the operator token.'),
      held.length ? table(['key', 'hold', 'reason', 'route', 'workflow', 'attempt', 'age', 'request', ''], rows, 'review')
        : notice('Nothing is held.', 'empty'));
  }

  async function viewSteps(params) {
    const q = new URLSearchParams();
    for (const k of ['status', 'hold', 'workflow']) if (params.get(k)) q.set(k, params.get(k));
    q.set('limit', '500');
    const keyPrefix = params.get('key') || '';
    const route = params.get('route') || '';
    const data = /^[0-9a-f]{64}$/.test(keyPrefix)
      ? await api('/v1/steps/' + keyPrefix).then((s) => ({ steps: [s] }), (e) => { if (e.status === 404) return { steps: [] }; throw e; })
      : await api('/v1/steps?' + q);
    const want = (k, v) => !params.get(k) || params.get(k) === v || (k === 'hold' && params.get(k) === 'none' && v === '');
    const steps = data.steps.filter((s) => s.key.startsWith(keyPrefix) && (!route || s.route === route || s.api + '/' + s.route === route) &&
      want('status', s.status) && want('hold', s.hold) && want('workflow', s.workflow));
    const input = (name, ph) => el('input', { name, value: params.get(name) || '', placeholder: ph, size: 14 });
    const select = (name, opts) => {
      const s = el('select', { name }, opts.map((o) => el('option', { value: o }, o || 'any ' + name)));
      s.value = params.get(name) || '';
      return s;
    };
    const form = el('form', { class: 'filters' }, input('key', 'key prefix'), ' ', input('route', 'route'), ' ',
      select('status', ['', 'prepared', 'started', 'committed', 'verified', 'failed']), ' ',
      select('hold', ['', 'none', 'awaiting_approval', 'needs_review']), ' ', input('workflow', 'workflow'), ' ',
      el('button', { type: 'submit' }, 'Search'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
      location.hash = '#/steps?' + p;
    });
    const rows = steps.map((s) => el('tr', { 'data-key': s.key, class: s.observed ? 'observed' : null },
      el('td', null, stepLink(s.key)), el('td', { class: 'status' }, badge(s.status), observedBadge(s)), el('td', null, badge(s.hold)),
      el('td', null, s.api + ' / ' + s.route), el('td', null, wfLink(s.workflow)), el('td', null, String(s.attempt)),
      el('td', null, s.operation_id || ''), el('td', null, ago(s.updated_at))));
    show(el('h1', null, 'Steps'), form,
      steps.length ? table(['key', 'status', 'hold', 'route', 'workflow', 'attempt', 'operation id', 'updated'], rows)
        : notice('No step matches.', 'empty'),
      data.steps.length >= 500 ? notice('Showing the first 500 steps the journal returned; narrow the search.') : '');
  }

  // stepEvents reads the events of one key; the API lists events by seq
  // only, so this pages through them (up to 20 pages of 1000).
  async function stepEvents(key) {
    let after = 0; const out = [];
    for (let page = 0; page < 20; page++) {
      const data = await api('/v1/events?limit=1000&after=' + after);
      if (!data.events.length) return { events: out, complete: true };
      for (const e of data.events) if (e.key === key) out.push(e);
      after = data.events[data.events.length - 1].seq;
    }
    return { events: out, complete: false };
  }

  async function viewStep(key) {
    const [s, evs] = await Promise.all([api('/v1/steps/' + encodeURIComponent(key)), stepEvents(key)]);
    const verification = s.status === 'verified' ? 'verified'
      : s.verify_by ? 'pending until ' + utc(s.verify_by) : 'none';
    const timeline = el('ol', { class: 'timeline' }, evs.events.map((e) => el('li', { 'data-seq': e.seq },
      el('time', { datetime: e.time }, utc(e.time)), ' ', el('b', null, e.type),
      e.from || e.to ? ' ' + (e.from || '') + ' → ' + (e.to || '') : '', e.hold ? ' hold ' + e.hold : '',
      e.reason ? el('span', { class: 'reason' }, ' — ' + e.reason) : '',
      e.note ? el('span', { class: 'note' }, ' note: ', el('q', null, e.note)) : '')));
    show(el('h1', null, 'Step'), el('p', null, el('code', { class: 'key' }, s.key), ' ', copyButton(s.key)),
      el('div', { class: 'actions' }, actions(s)),
      s.observed ? notice('An observation of observe mode: this call was forwarded untouched, and its record is never replayed. ' +
        'Its events say what enforcement would have done.', 'observed') : '',
      dl([['status', [badge(s.status), observedBadge(s)]], ['hold', badge(s.hold)], ['hold reason', s.hold_reason], ['route', s.api + ' / ' + s.route],
        ['workflow', wfLink(s.workflow)], ['request', el('code', null, s.method + ' ' + s.target)], ['attempt', String(s.attempt)],
        ['operation id', s.operation_id], ['evidence', s.evidence], ['last error', s.last_error], ['decision', s.decision],
        ['key fields', keyFields(s)], ['request fields', (s.request_fields || []).length ? requestFields(s) : ''], ['body hash', el('code', null, s.body_hash)], ['response', s.response_status ? String(s.response_status) + ' (' + s.response_bytes + ' bytes)' : ''],
        ['response hash', s.response_hash ? el('code', null, s.response_hash) : ''], ['verification', verification],
        ['prompt version', s.prompt_version], ['policy version', s.policy_version],
        ['created', utc(s.created_at)], ['updated', utc(s.updated_at)]]),
      el('h2', null, 'Events'), evs.events.length ? timeline : notice('No events.'),
      evs.complete ? '' : notice('Only the first 20,000 events of the journal were searched.'));
  }

  async function viewWorkflows() {
    const data = await api('/v1/workflows');
    const rows = data.workflows.map((w) => el('tr', { 'data-id': w.id },
      el('td', null, wfLink(w.id)), el('td', null, badge(w.status)), el('td', null, String(w.version)),
      el('td', null, String(w.steps)), el('td', null, String(w.held)), el('td', null, w.current_route || '')));
    show(el('h1', null, 'Workflows'),
      rows.length ? table(['id', 'status', 'version', 'steps', 'held', 'current route'], rows) : notice('No workflows yet.', 'empty'));
  }

  function checkpointView(cp) {
    if (!cp) return notice('No checkpoint stored.');
    const list = (items) => (items && items.length ? el('ul', null, items.map((i) => el('li', null, i))) : '');
    return dl([['goal', cp.goal], ['constraints', list(cp.constraints)], ['plan', list(cp.plan)],
      ['unresolved', list(cp.unresolved)],
      ['artifacts', cp.artifacts && cp.artifacts.length ? el('ul', null, cp.artifacts.map((a) => el('li', null, a.id, ' ', el('code', null, short(a.sha256)), a.uri ? ' ' + a.uri : ''))) : ''],
      ['prompt version', cp.prompt_version], ['policy version', cp.policy_version]]);
  }

  async function viewWorkflow(id) {
    const p = await api('/v1/workflows/' + encodeURIComponent(id) + '/resume');
    const w = p.workflow;
    const rows = p.steps.map((s, i) => el('tr', { 'data-key': s.key },
      el('td', null, String(i + 1)), el('td', null, stepLink(s.key)), el('td', null, s.route), el('td', null, badge(s.status)),
      el('td', null, badge(s.hold)), el('td', null, String(s.attempt)), el('td', null, s.operation_id || ''),
      el('td', null, s.evidence || ''), el('td', null, s.next_action || '')));
    show(el('h1', null, 'Workflow ', el('span', { class: 'wf-id' }, w.id)),
      el('section', { id: 'next-safe-action', class: 'next-safe-action' }, el('h2', null, 'Next safe action'), el('p', null, p.next_safe_action)),
      dl([['status', badge(w.status)], ['version', String(w.version)], ['prompt version', w.prompt_version], ['policy version', w.policy_version],
        ['input hash', w.input_hash ? el('code', null, w.input_hash) : ''], ['steps', String(w.steps)], ['held', String(w.held)]]),
      el('h2', null, 'Steps in order'), rows.length ? table(['#', 'key', 'route', 'status', 'hold', 'attempt', 'operation id', 'evidence', 'next action'], rows) : notice('No steps.'),
      el('h2', null, 'Unresolved'), p.unresolved.length ? el('ul', { class: 'unresolved' }, p.unresolved.map((u) => el('li', null, stepLink(u.key), ' ', u.route, ' ', badge(u.hold), ' ', u.reason || '', u.detail ? ' — ' + u.detail : ''))) : notice('Nothing unresolved.'),
      el('h2', null, 'Checkpoint'), checkpointView(p.checkpoint),
      el('details', null, el('summary', null, 'Resume packet (JSON)'), el('pre', { class: 'json' }, JSON.stringify(p, null, 2))));
  }

  // viewObserved shows what enforcement would have done with the calls of
  // observe mode, by route: the duplicates it would have stopped, the holds
  // and refusals it would have made, with example keys.
  async function viewObserved(params) {
    const since = params.get('since') || '24h';
    const r = await api('/v1/observations?since=' + encodeURIComponent(since));
    const cls = { replay: 'stopped', wait: 'stopped', hold_approval: 'held', hold_ambiguous: 'held' };
    const woulds = (counts) => el('ul', { class: 'woulds' }, Object.entries(counts).map(([w, n]) =>
      el('li', { 'data-would': w }, badge(w, 'would ' + (cls[w] || (w.startsWith('refuse') ? 'refused' : ''))), ' ', String(n))));
    const examples = (ex) => el('ul', { class: 'examples' }, Object.entries(ex || {}).map(([w, keys]) =>
      el('li', null, w + ': ', keys.map((k) => [stepLink(k), ' ']))));
    const rows = r.routes.map((x) => el('tr', { 'data-route': x.api + '/' + x.route },
      el('td', null, x.api + ' / ' + x.route), el('td', { class: 'observed-n' }, String(x.observed)),
      el('td', { class: 'stopped-n' }, String(x.stopped)), el('td', { class: 'held-n' }, String(x.held)),
      el('td', { class: 'refused-n' }, String(x.refused)), el('td', null, woulds(x.would)), el('td', null, examples(x.examples))));
    show(el('h1', null, 'Observe mode'),
      el('p', null, 'Calls of APIs in observe mode are forwarded untouched; this is what enforcement would have done with those made since ' +
        utc(r.since) + '. Switching an API to enforce needs no migration: observations are never replayed.'),
      el('p', { id: 'observed-totals', class: 'totals' }, 'Observed ', el('b', { id: 'observed-total' }, String(r.observed)), ' calls: enforcement would have stopped ',
        el('b', { id: 'would-stop' }, String(r.stopped)), ' duplicates, held ', el('b', { id: 'would-hold' }, String(r.held)),
        ' and refused ', el('b', { id: 'would-refuse' }, String(r.refused)), '.'),
      rows.length ? table(['route', 'observed', 'would stop', 'would hold', 'would refuse', 'would', 'example keys'], rows, 'observations')
        : notice('No observations: no API is in observe mode (guard.mode), or none of its calls came.', 'empty'));
  }

  function viewEvents() {
    const rows = state.feed.map((e) => el('tr', { 'data-seq': e.seq },
      el('td', null, String(e.seq)), el('td', null, el('time', { datetime: e.time }, utc(e.time))), el('td', null, e.type),
      el('td', null, stepLink(e.key)), el('td', null, (e.from || '') + (e.to ? ' → ' + e.to : '')), el('td', null, e.reason || ''),
      el('td', null, e.note || '')));
    show(el('h1', null, 'Live events'), el('p', null, 'Events since this page was opened, newest first; updated every second. Times are UTC.'),
      rows.length ? table(['seq', 'time', 'type', 'key', 'status', 'reason', 'note'], rows, 'events') : notice('No new events yet.', 'empty'));
    return Promise.resolve();
  }

  // ---- routing -------------------------------------------------------------

  async function render(quiet) {
    if (!token() && !role()) { renderSignIn(); return; }
    const hash = location.hash.replace(/^#/, '') || '/review';
    const [path, query] = hash.split('?');
    const params = new URLSearchParams(query || '');
    const parts = path.split('/').filter(Boolean);
    state.busy = true;
    try {
      switch (parts[0]) {
        case 'signin': renderSignIn(); break;
        case 'steps': await viewSteps(params); break;
        case 'step': await viewStep(decodeURIComponent(parts.slice(1).join('/'))); break;
        case 'workflows': await viewWorkflows(); break;
        case 'workflow': await viewWorkflow(decodeURIComponent(parts.slice(1).join('/'))); break;
        case 'events': await viewEvents(); break;
        case 'observed': await viewObserved(params); break;
        default: await viewReview();
      }
      document.body.dataset.view = parts[0] || 'review';
      // The view of this address is on the page (tests wait for it).
      document.body.dataset.rendered = hash;
    } catch (e) {
      if (e.status !== 401 && !quiet) show(el('h1', null, 'Error'), notice(e.message, 'error'));
    } finally {
      state.busy = false;
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    document.getElementById('signout').addEventListener('click', () => signOut('Signed out.'));
    window.addEventListener('hashchange', () => render());
    if (role()) { start(); render(); } else { signOut(); }
  });
}());
