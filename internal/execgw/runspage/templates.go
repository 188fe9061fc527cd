package runspage

import (
	"embed"
	"html/template"
	"net/http"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// pages are parsed once; the files are compiled in, so a parse error is a
// build mistake that every test of the package catches.
var pages = template.Must(template.New("").ParseFS(templateFiles, "templates/*.html"))

// staticTypes are the page's other files and their types.
var staticTypes = map[string]string{
	"runs.css": "text/css; charset=utf-8",
	"runs.js":  "text/javascript; charset=utf-8",
}

// serveStatic serves the stylesheet and the live-events script.
func serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	ct, ok := staticTypes[name]
	if !ok {
		http.Error(w, "Not found.", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
		return
	}
	b, err := staticFiles.ReadFile("static/" + name)
	if err != nil {
		http.Error(w, "Not found.", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "max-age=300")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(b)
}
