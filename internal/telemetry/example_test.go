package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"novaos.dev/novaos/internal/telemetry"
)

func Example() {
	tr, err := telemetry.NewTracing(nil) // no endpoint: carry inbound traces on, export nothing
	if err != nil {
		panic(err)
	}
	defer tr.Shutdown(context.Background())
	reg := telemetry.NewRegistry()
	// Access log lines carry trace_id and span_id; drop the timestamp and
	// duration so the output is stable.
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "durationMs" || a.Key == "remote" {
				return slog.Attr{}
			}
			return a
		},
	})))
	obs, err := telemetry.NewHTTP(&telemetry.HTTPOptions{Tracing: tr.Provider(), Metrics: reg, AccessLog: log,
		Service: func(string) string { return "hello" }})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello/{name}", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hi "+r.PathValue("name")) })
	srv := httptest.NewServer(obs.Wrap(mux))
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/hello/ada", nil)
	req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "novaos_http_requests_total") {
			for _, l := range mf.GetMetric()[0].GetLabel() {
				fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
			}
			fmt.Println(mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// {"level":"INFO","msg":"http request","method":"GET","route":"/hello/{name}","path":"/hello/ada","status":200,"bytes":6,"service":"hello","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}
	// code=200 method=GET route=/hello/{name} service=hello 1
}
