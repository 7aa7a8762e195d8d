package console

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

//go:embed web
var files embed.FS

// Prefix is where the admin listener mounts the console.
const Prefix = "/ui/"

// FaviconPath is where browsers look for a site's icon when a page names
// none: the root of the admin listener, which mounts Handler there too.
const FaviconPath = "/favicon.ico"

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

// Handler serves the console under Prefix: the shell page at Prefix, the
// script, style and icons under Prefix+"static/", and the icon at
// FaviconPath as well. Everything it serves is static and public.
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
		case r.URL.Path == FaviconPath || r.URL.Path == Prefix+"static/favicon.ico":
			// One type for the icon wherever it is asked for: the
			// system's MIME table, which the file server reads, varies.
			serveFavicon(w, r)
		case strings.HasPrefix(r.URL.Path, Prefix+"static/"):
			assets.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// serveFavicon answers an icon request (browsers ask for FaviconPath on
// their own); the icon may be cached for a day.
func serveFavicon(w http.ResponseWriter, r *http.Request) {
	ico, err := files.ReadFile("web/static/favicon.ico")
	if err != nil {
		http.Error(w, "no icon", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/x-icon")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeContent(w, r, "favicon.ico", time.Time{}, bytes.NewReader(ico))
}

func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
