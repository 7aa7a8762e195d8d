package console

import (
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed web
var files embed.FS

// Prefix is where the admin listener mounts the console.
const Prefix = "/ui/"

// csp allows the console's own script, style and API calls and nothing
// else: no inline script, no eval, no framing, no plugins.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

var shell = template.Must(template.ParseFS(files, "web/index.html"))

// Options configure the console.
type Options struct {
	// Version is shown in the page footer; empty shows nothing.
	Version string
}

// Handler serves the console under Prefix: the shell page at Prefix and
// the script and style under Prefix+"static/".
func Handler(opts Options) http.Handler {
	static, _ := fs.Sub(files, "web/static")
	assets := http.StripPrefix(Prefix+"static/", http.FileServer(http.FS(static)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case r.URL.Path == Prefix:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			shell.Execute(w, opts)
		case strings.HasPrefix(r.URL.Path, Prefix+"static/"):
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
