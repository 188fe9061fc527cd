package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/schemacheck"
)

// DefaultMaxParamsBytes bounds a connector call's encoded params: the
// SDK has no schema of a connector's operations, so it guards against
// gross mistakes only.
const DefaultMaxParamsBytes = 256 << 10

// Tier is the connector-host catalogue tier a connector is registered
// on; it is one segment of the tool's name.
type Tier string

// Connector tiers.
const (
	TierStandard Tier = "standard" // novaos.connector.<id>.<op>
	TierLicensed Tier = "licensed" // novaos.connector.licensed.<id>.<op>
	TierExt      Tier = "ext"      // novaos.connector.ext.<id>.<op>
)

// ConnectorToolName returns the tool name of operation op of connector
// id on tier ("" is TierStandard): novaos.connector.<id>.<op>, with the
// tier as one more segment for licensed and ext. id and op must be
// tool-name segments (A-Z, a-z, 0-9, '_', '-').
func ConnectorToolName(tier Tier, id, op string) (string, error) {
	var name string
	switch tier {
	case "", TierStandard:
		name = Prefix + ServerConnector + "." + id + "." + op
	case TierLicensed, TierExt:
		name = Prefix + ServerConnector + "." + string(tier) + "." + id + "." + op
	default:
		return "", fmt.Errorf("%w: tier %q: want %s, %s or %s", ErrInvalidArgument, clip(string(tier), 40), TierStandard, TierLicensed, TierExt)
	}
	if !validSegment(id) || !validSegment(op) {
		return "", fmt.Errorf("%w: connector id and operation must be non-empty runs of A-Z, a-z, 0-9, '_' and '-'", ErrInvalidArgument)
	}
	if !ValidName(name) {
		return "", fmt.Errorf("%w: tool name %s is over 128 bytes", ErrInvalidArgument, name)
	}
	return name, nil
}

// ConnectorCall is one call of a connector's operation.
type ConnectorCall struct {
	ConnectorID string
	Operation   string
	// Params are the operation's arguments, a JSON object the gateway
	// forwards as the body of connector-host's
	// POST /api/v1/connectors/{id}/{op}; nil sends {}.
	Params any
	// Tier is the connector's tier; "" is TierStandard.
	Tier Tier
	// ParamsSchema, when set, is a JSON Schema Params is checked against
	// before anything is sent (remote $refs are not fetched).
	ParamsSchema json.RawMessage
}

// Connector calls third-party integrations through connector-host
// (routed by the gateway, disabled unless the platform enables it).
// Connector calls are not retried: operations are often not idempotent
// (create-task, send-message).
type Connector struct{ k *core }

// Call calls the operation. On success the data is connector-host's
// envelope {"data", "provenance", "meta"}. A connector-host that is
// off fails with an error naming SERVICE_DISABLED. A standard-tier
// call of a tool the gateway does not know gets a hint to try the
// licensed or ext tier.
func (c *Connector) Call(ctx context.Context, r *ConnectorCall, opts ...CallOption) (*Response, error) {
	if r == nil {
		return invalid(Prefix+ServerConnector, errors.New("no call"))
	}
	name, err := ConnectorToolName(r.Tier, r.ConnectorID, r.Operation)
	if err != nil {
		return failed(err), err
	}
	params, err := objectJSON(r.Params)
	if err != nil {
		return invalid(name, fmt.Errorf("params: %w", err))
	}
	if len(params) > c.k.maxParamsBytes {
		return invalid(name, fmt.Errorf("params of %d bytes, over the %d-byte limit", len(params), c.k.maxParamsBytes))
	}
	if len(r.ParamsSchema) > 0 {
		if err := checkSchema(r.ParamsSchema, params, c.k.maxParamsBytes); err != nil {
			return invalid(name, err)
		}
	}
	resp, err := c.k.call(ctx, name, params, spec{}, opts)
	if (r.Tier == "" || r.Tier == TierStandard) && toolNotFound(err) {
		resp.Error += ` (a connector registered on another tier has another tool name: try Tier "licensed" or "ext")`
	}
	return resp, err
}

// toolNotFound reports whether err says the gateway knows no such tool.
func toolNotFound(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Data.Code == ReasonToolNotFound ||
		e.Code == -32602 && strings.Contains(strings.ToLower(e.Message), "unknown tool")
}

// checkSchema validates params against schema. The schema may refer to
// nothing outside itself (package schemacheck): a $ref to a URL or a file
// is refused, never read.
func checkSchema(schema, params json.RawMessage, limit int) error {
	sch, err := schemacheck.Compile(schema, limit)
	if err != nil {
		return fmt.Errorf("params schema: %w", err)
	}
	inst, err := schemacheck.Value(params)
	if err != nil {
		return fmt.Errorf("params: %w", err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("params do not match the schema: %w", err)
	}
	return nil
}
