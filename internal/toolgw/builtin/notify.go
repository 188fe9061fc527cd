package builtin

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// NotifyWebhook is the webhook tool's name.
const NotifyWebhook = tools.Prefix + tools.ServerNotify + ".webhook"

// Defaults of NotifyOptions.
const (
	DefaultNotifyTimeout          = 10 * time.Second
	DefaultMaxPayloadBytes        = 256 << 10
	DefaultMaxNotifyResponseBytes = 64 << 10
)

// NotifyOptions configure the notify server. Zero fields mean the
// defaults.
type NotifyOptions struct {
	// Policy says which destinations webhooks may reach, checked on the
	// URL's host and on every address it resolves to when dialled; nil
	// means public addresses only.
	Policy *netguard.Policy
	// Resolver resolves webhook host names (net.DefaultResolver).
	Resolver Resolver
	// AllowHTTP lets webhooks be plain http:// URLs; by default only
	// https:// URLs are taken.
	AllowHTTP bool
	// TLSConfig, when set, is the TLS client configuration (a private CA).
	TLSConfig *tls.Config
	// Timeout bounds one delivery, connecting to reading the answer
	// (DefaultNotifyTimeout); ConnectTimeout bounds connecting and the
	// TLS handshake (DefaultConnectTimeout).
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// MaxPayloadBytes bounds the JSON body sent (DefaultMaxPayloadBytes).
	MaxPayloadBytes int64
	// MaxResponseBytes is how much of the receiver's answer is read, then
	// dropped (DefaultMaxNotifyResponseBytes); the rest is not read.
	MaxResponseBytes int64
	// Logger hears deliveries (never a URL, header value or payload);
	// nil discards.
	Logger *slog.Logger
}

func (o *NotifyOptions) withDefaults() NotifyOptions {
	var v NotifyOptions
	if o != nil {
		v = *o
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultNotifyTimeout
	}
	if v.ConnectTimeout <= 0 {
		v.ConnectTimeout = DefaultConnectTimeout
	}
	if v.MaxPayloadBytes <= 0 {
		v.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if v.MaxResponseBytes <= 0 {
		v.MaxResponseBytes = DefaultMaxNotifyResponseBytes
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	return v
}

// Notify returns the notify server: novaos.notify.webhook, which POSTs a
// JSON payload to a URL the caller gives.
func Notify(opts *NotifyOptions) (toolgw.Provider, error) {
	o := opts.withDefaults()
	n := &notifier{o: o, out: newOutbound(o.Policy, o.Resolver, o.TLSConfig, o.ConnectTimeout, nil)}
	schema := fmt.Sprintf(`{"type":"object","properties":{`+
		`"url":{"type":"string","minLength":1,"maxLength":%d,"description":"The webhook: an absolute https URL on a public host."},`+
		`"payload":{"description":"Any JSON value, sent as the request body (at most %d bytes, nested at most %d deep)."},`+
		`"headers":%s},"required":["url","payload"],"additionalProperties":false}`,
		maxURLBytes, o.MaxPayloadBytes, maxArgDepth, headersSchema)
	t := toolgw.Tool{
		Tool: tools.Tool{
			Name:  NotifyWebhook,
			Title: "Send a webhook",
			Description: "POSTs payload as JSON (Content-Type: application/json) to url. The URL must be https " +
				"(unless the operator allows http) on a public host: private, loopback and cloud-metadata addresses " +
				"are refused, also when a name resolves to one at connect time. Redirects are not followed. " +
				`Answers {"status": <HTTP status>, "delivered": true} when the receiver answers 2xx; any other status ` +
				`is an error result {"code", "error", "status", "delivered": false}. A notification sent cannot be unsent.`,
			InputSchema:  json.RawMessage(schema),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"integer"},"delivered":{"type":"boolean"}},"required":["status","delivered"]}`),
			Annotations: &tools.Annotations{
				ReadOnly: ptr(false), Destructive: ptr(false), Idempotent: ptr(false), OpenWorld: ptr(true),
			},
		},
		Timeout: o.Timeout,
	}
	return newStatic(entry{tool: t, call: n.webhook}), nil
}

type notifier struct {
	o   NotifyOptions
	out *outbound
}

type webhookArgs struct {
	URL     string            `json:"url"`
	Payload json.RawMessage   `json:"payload"`
	Headers map[string]string `json:"headers"`
}

func (n *notifier) webhook(parent context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	var a webhookArgs
	if res := decodeArgs(r.Arguments, &a); res != nil {
		return res, nil
	}
	if len(a.Payload) == 0 {
		return invalidf("payload is required"), nil
	}
	if int64(len(a.Payload)) > n.o.MaxPayloadBytes {
		return invalidf("the payload is larger than %d bytes", n.o.MaxPayloadBytes), nil
	}
	if res := checkHeaders(a.Headers); res != nil {
		return res, nil
	}
	u, host, res := n.out.checkURL(a.URL, n.o.AllowHTTP)
	if res != nil {
		return res, nil
	}
	ctx, cancel := context.WithTimeout(parent, n.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(a.Payload))
	if err != nil {
		return invalidf("the URL is not usable"), nil
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "novaos-notify/1")
	}
	log := n.o.Logger.With("tool", NotifyWebhook, "host", host, "tenant", r.Caller.Tenant, "call_id", r.CallID)
	resp, err := n.out.client.Do(req)
	if err != nil {
		log.Info("builtin: webhook not delivered", "err", errText(err))
		return failure(parent, ctx, err, "the webhook", n.o.Timeout)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, n.o.MaxResponseBytes))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		log.Info("builtin: webhook refused", "status", resp.StatusCode)
		return errorResult(tools.ReasonUnavailable, fmt.Sprintf("the webhook answered HTTP %d", resp.StatusCode),
			map[string]any{"status": resp.StatusCode, "delivered": false}), nil
	}
	log.Debug("builtin: webhook delivered", "status", resp.StatusCode)
	return toolgw.JSONResult(map[string]any{"status": resp.StatusCode, "delivered": true})
}
