package httpapi_test

import (
	"fmt"
	"io"
	"net/http"

	"novaos.dev/novaos/internal/httpapi"
)

// A client whose requests a handler in this process serves, as if it
// were across the network.
func ExampleHandlerTransport() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"host":%q,"peer":%q}`, r.Host, r.RemoteAddr)
	})
	c := &http.Client{Transport: httpapi.HandlerTransport(h)}

	resp, err := c.Get("http://novaos.internal/agents/echo")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, resp.ContentLength, string(b))
	// Output: 200 47 {"host":"novaos.internal","peer":"127.0.0.1:0"}
}
