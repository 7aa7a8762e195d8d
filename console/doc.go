// Package console is toolguard's web console: a static page and a small
// script, embedded in the binary, that the admin listener serves at /ui/.
//
// # How it works
//
// The server renders only the page's shell. The script signs in with a
// bearer token (the operator's, or the agent's for a read-only view), keeps
// it in sessionStorage and sends it in the Authorization header of every
// call to the admin JSON API (/v1/...). The console reads nothing else: no
// journal internals, no cookies. Mutations therefore carry the token in a
// header, which a cross-site page cannot set, so there is no CSRF surface.
// The admin API enforces what a token may do; the console only hides the
// buttons a read-only token could not use.
//
// # Security
//
// Every answer carries a Content-Security-Policy that allows scripts,
// styles and connections from the admin origin only (no inline script, no
// eval), forbids framing, and sends no referrer. The script builds the page
// with DOM nodes and textContent, never innerHTML, so a stored value such
// as <script> or <img onerror> is shown as text.
package console
