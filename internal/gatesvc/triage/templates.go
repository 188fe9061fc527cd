package triage

import (
	"embed"
	"html/template"
	"net/http"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/triage.css
var stylesheet []byte

// pages are parsed once; the files are compiled in, so a parse error is a
// build mistake that every test of the package catches.
var pages = template.Must(template.New("").Funcs(template.FuncMap{"micros": micros}).ParseFS(templateFiles, "templates/*.html"))

// staticHandler serves the stylesheet, the page's only other file.
func staticHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/css; charset=utf-8")
		h.Set("Cache-Control", "max-age=300")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(stylesheet)
	})
}
