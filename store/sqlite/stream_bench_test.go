package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// chunks streams as many equal chunks as its message's text says; "0"
// answers like an echo (WORKING, one artifact, COMPLETED).
var chunks = a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	var n int
	fmt.Sscan(req.Message.Text(), &n)
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	for i := range max(n, 1) {
		art := a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("w%06d ", i))}}
		if err := u.AddArtifact(ctx, art, i > 0, i == max(n, 1)-1, nil); err != nil {
			return err
		}
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
})

// benchClient keeps a connection per concurrent caller.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func call(tb testing.TB, url, method, text string) *http.Response {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"message":{"messageId":%q,"role":"ROLE_USER","parts":[{"text":%q}]}}}`,
		method, a2a.NewID(), text)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, "1.0")
	resp, err := benchClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// BenchmarkStreamVsSend measures, on one SQLite database with
// synchronous=FULL and in the same run, the chunks per second of a single
// stream of 100,000 chunks and the SendMessage rate of 32 concurrent
// callers, and reports their ratio. Run with -benchtime=1x.
func BenchmarkStreamVsSend(b *testing.B) {
	db := tempDB(b)
	card := &a2a.AgentCard{Name: "bench", Capabilities: a2a.AgentCapabilities{Streaming: new(true)}}
	h := a2asrv.NewHandler(card, chunks, &a2asrv.Options{TaskStore: db.TaskStore()})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range b.N {
		const n = 100_000
		start := time.Now()
		resp := call(b, srv.URL, a2a.MethodSendStreamingMessage, fmt.Sprint(n))
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		frames := 0
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				frames++
			}
		}
		resp.Body.Close()
		streamed := time.Since(start)
		if frames < 2 {
			b.Fatalf("stream gave %d frames", frames)
		}

		var sends atomic.Int64
		var wg sync.WaitGroup
		deadline := time.Now().Add(3 * time.Second)
		for range 32 {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					r := call(b, srv.URL, a2a.MethodSendMessage, "0")
					r.Body.Close()
					sends.Add(1)
				}
			})
		}
		wg.Wait()
		chunkRate := float64(n) / streamed.Seconds()
		sendRate := float64(sends.Load()) / 3
		b.ReportMetric(chunkRate, "chunks/s")
		b.ReportMetric(sendRate, "sends/s")
		b.ReportMetric(chunkRate/sendRate, "chunks/send")
	}
}
