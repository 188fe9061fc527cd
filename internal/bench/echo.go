package bench

import (
	"encoding/json"
	"net/http"
)

// maxEchoBody bounds the baseline's request body, as any real handler would.
const maxEchoBody = 1 << 20

// EchoHandler is the baseline a benchmark compares against: a bare net/http
// handler that decodes a JSON body and encodes it back, with nothing else
// (no routing, no store, no protocol). Anything but a POST of valid JSON
// gets a 4xx.
func EchoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxEchoBody))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			http.Error(w, "invalid JSON", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v) // the client is gone if this fails
	})
}
