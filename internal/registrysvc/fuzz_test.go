package registrysvc_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"novaos.dev/novaos/internal/registrysvc"
	"novaos.dev/novaos/registry"
)

// Any body gets a record or a problem, never a 500 or a panic.
func FuzzRegisterBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","url":"https://a.example.com/"}`,
		`{"name":"a","url":"https://a.example.com/","metadata":{"capabilities":[{"name":"x"},1,null]}}`,
		`{"name":"a","url":"http://127.0.0.1/","tags":[""]}`,
		`{"name":"a","url":"https://a.example.com/","recipientKeys":[{"kty":"OKP","crv":"X25519","kid":"k","x":"AAAA"},null,"x",{"d":"AA"}]}`,
		`{"name":`, `[]`, `null`, `{"name":"a"}{}`, `{"colour":1}`, "\x00", `{"name":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	svc := registrysvc.New(registrysvc.NewMemoryStore(), nil)
	h := svc.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, method := range []string{http.MethodPost, http.MethodPut} {
			path := registry.APIPath
			if method == http.MethodPut {
				path += "/a"
			}
			req := httptest.NewRequest(method, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.RemoteAddr = "127.0.0.1:40000" // writes are open to loopback peers
			req.Host = "localhost:8080"        // naming the server as loopback
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			switch rec.Code {
			case 200, 201:
				var a registry.Agent
				if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.ID == "" {
					t.Fatalf("%s answered %d with %s", method, rec.Code, rec.Body)
				}
			case 400, 404, 409, 413, 422:
				var p registry.Problem
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Type == "" {
					t.Fatalf("%s answered %d with %s", method, rec.Code, rec.Body)
				}
			default:
				t.Fatalf("%s %q answered %d: %s", method, body, rec.Code, rec.Body)
			}
		}
	})
}
